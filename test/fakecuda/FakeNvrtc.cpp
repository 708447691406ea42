//===- FakeNvrtc.cpp - A stand-in NVRTC that compiles for the host --------===//
//
// libnvrtc.so for tests on machines with no GPU: "compiling" a program
// compiles its CUDA source for the host (HostKernels.h) into a shared
// library in a fresh temporary folder, and the "PTX" is that library's
// path, which the stand-in driver (FakeDriver.cpp) loads as a module.
//
//===----------------------------------------------------------------------===//

#include "HostKernels.h"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace ucp::testing;

namespace {
struct Program {
  std::string source, log, library;
};
enum : int { kSuccess = 0, kCompilation = 6 };

/// Copies `text` with its terminating NUL to `out`.
int copyOut(const std::string &text, char *out) {
  std::memcpy(out, text.c_str(), text.size() + 1);
  return kSuccess;
}
} // namespace

extern "C" {

int nvrtcCreateProgram(void **program, const char *source, const char *, int,
                       const char *const *, const char *const *) {
  *program = new Program{source, "", ""};
  return kSuccess;
}

int nvrtcCompileProgram(void *handle, int, const char *const *) {
  auto *program = static_cast<Program *>(handle);
  const char *tmp = std::getenv("TMPDIR");
  std::string folder =
      std::string(tmp ? tmp : "/tmp") + "/ucp-fake-nvrtc-XXXXXX";
  if (!mkdtemp(folder.data())) {
    program->log = "fake NVRTC: cannot create a temporary folder";
    return kCompilation;
  }
  program->library = folder + "/kernels.so";
  return compileKernelsForHost(program->source, program->library, program->log)
             ? kSuccess
             : kCompilation;
}

int nvrtcGetProgramLogSize(void *program, size_t *size) {
  *size = static_cast<Program *>(program)->log.size() + 1;
  return kSuccess;
}

int nvrtcGetProgramLog(void *program, char *log) {
  return copyOut(static_cast<Program *>(program)->log, log);
}

int nvrtcGetPTXSize(void *program, size_t *size) {
  *size = static_cast<Program *>(program)->library.size() + 1;
  return kSuccess;
}

int nvrtcGetPTX(void *program, char *ptx) {
  return copyOut(static_cast<Program *>(program)->library, ptx);
}

int nvrtcDestroyProgram(void **program) {
  delete static_cast<Program *>(*program);
  *program = nullptr;
  return kSuccess;
}

} // extern "C"

//===- FakeNvrtc.cpp - A stand-in NVRTC that compiles for the host --------===//
//
// libnvrtc.so for tests on machines with no GPU: "compiling" a program
// compiles its CUDA source for the host (HostKernels.h) into a shared
// library in a fresh temporary folder, and the "PTX" or "cubin" is that
// library's path, which the stand-in driver (FakeDriver.cpp) loads as a
// module. It compiles for the architectures UCP_FAKE_NVRTC_ARCHS lists
// ("75,80,86"; by default NVRTC 13's), or, with "none", cannot list them,
// as NVRTC before 11.2; machine code ("sm_NN") comes as a cubin, PTX
// ("compute_NN") not.
//
//===----------------------------------------------------------------------===//

#include "HostKernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace ucp::testing;

namespace {
struct Program {
  std::string source, log, library;
  /// Whether it was compiled to machine code ("sm_NN").
  bool machineCode = false;
};
enum : int {
  kSuccess = 0,
  kInvalidInput = 4,
  kInvalidOption = 5,
  kCompilation = 6
};

/// The architectures it compiles for; false where it cannot list them.
bool getArchitectures(std::vector<int> &architectures) {
  const char *listed = std::getenv("UCP_FAKE_NVRTC_ARCHS");
  std::string text =
      listed ? listed : "75,80,86,87,88,89,90,100,103,110,120,121";
  if (text == "none")
    return false;
  std::stringstream in(text);
  for (std::string arch; std::getline(in, arch, ',');)
    architectures.push_back(std::stoi(arch));
  return true;
}

/// Checks the --gpu-architecture option of `options` as NVRTC does.
int checkArchitecture(Program &program, int count, const char *const *options) {
  const std::string prefix = "--gpu-architecture=";
  for (int i = 0; i < count; ++i) {
    std::string option = options[i];
    if (option.rfind(prefix, 0) != 0)
      continue;
    std::string arch = option.substr(prefix.size());
    program.machineCode = arch.rfind("sm_", 0) == 0;
    int number = std::stoi(arch.substr(arch.find('_') + 1));
    std::vector<int> known;
    if (getArchitectures(known) &&
        std::find(known.begin(), known.end(), number) == known.end()) {
      program.log = "nvrtc: error: invalid value for --gpu-architecture";
      return kInvalidOption;
    }
  }
  return kSuccess;
}

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

int nvrtcCompileProgram(void *handle, int count, const char *const *options) {
  auto *program = static_cast<Program *>(handle);
  if (int result = checkArchitecture(*program, count, options))
    return result;
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

int nvrtcGetCUBINSize(void *handle, size_t *size) {
  auto *program = static_cast<Program *>(handle);
  *size = program->machineCode ? program->library.size() + 1 : 0;
  return kSuccess;
}

int nvrtcGetCUBIN(void *handle, char *cubin) {
  auto *program = static_cast<Program *>(handle);
  return program->machineCode ? copyOut(program->library, cubin)
                              : kInvalidInput;
}

int nvrtcGetNumSupportedArchs(int *count) {
  std::vector<int> architectures;
  if (!getArchitectures(architectures))
    return kInvalidInput;
  *count = static_cast<int>(architectures.size());
  return kSuccess;
}

int nvrtcGetSupportedArchs(int *out) {
  std::vector<int> architectures;
  if (!getArchitectures(architectures))
    return kInvalidInput;
  std::copy(architectures.begin(), architectures.end(), out);
  return kSuccess;
}

int nvrtcDestroyProgram(void **program) {
  delete static_cast<Program *>(*program);
  *program = nullptr;
  return kSuccess;
}

} // extern "C"

//===- CudaHostEmulation.cpp - Generated kernels run on the host ----------===//

#include "CudaHostEmulation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

using namespace ucp;
using namespace ucp::testing;

/// What the emitted source takes from CUDA, for a host compiler.
static const char *const kPrelude = R"cpp(
#define __device__
#define __global__
struct UcpDim3 { unsigned x, y, z; };
static UcpDim3 blockIdx, threadIdx, blockDim, gridDim;
)cpp";

/// The host entry point that runs `launch`'s whole grid.
static void emitEntry(const CudaLaunch &launch, llvm::raw_ostream &os) {
  os << "extern \"C\" void ucp_host_" << launch.kernel
     << "(unsigned blocks, unsigned threads, const void *src, void *dst) {\n"
        "  gridDim.x = blocks;\n"
        "  blockDim.x = threads;\n"
        "  for (blockIdx.x = 0; blockIdx.x < blocks; ++blockIdx.x)\n"
        "    for (threadIdx.x = 0; threadIdx.x < threads; ++threadIdx.x)\n"
        "      "
     << launch.kernel << "("
     << (launch.sourceBuffer >= 0 ? "(const ucp_elem *)src, " : "")
     << "(ucp_elem *)dst);\n}\n";
}

static llvm::Error fail(const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), why.str());
}

llvm::Expected<HostCudaModule>
HostCudaModule::compile(const CudaModule &module) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("ucp-cuda-host", dir))
    return fail("cannot create a temporary directory: " + ec.message());
  // The library stays loaded after its files are gone.
  auto cleanUp =
      llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(dir); });
  std::string source = (dir + "/kernels.cpp").str();
  std::string library = (dir + "/kernels.so").str();
  std::string log = (dir + "/compiler.log").str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(source, ec);
    if (ec)
      return fail("cannot write " + source + ": " + ec.message());
    os << kPrelude << module.source << "\n";
    for (const CudaLaunch &launch : module.launches)
      emitEntry(launch, os);
  }
  llvm::StringRef compiler = UCP_HOST_CXX;
  llvm::StringRef args[] = {compiler, "-std=c++17", "-O1",   "-shared",
                            "-fPIC",  "-o",         library, source};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log, log};
  std::string error;
  int result = llvm::sys::ExecuteAndWait(compiler, args, std::nullopt,
                                         redirects, 0, 0, &error);
  if (result != 0) {
    auto output = llvm::MemoryBuffer::getFile(log);
    return fail(compiler + " could not compile the generated kernels for " +
                "the host (" + error + "):\n" +
                (output ? (*output)->getBuffer() : ""));
  }
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return fail(llvm::Twine("cannot load ") + library + ": " + dlerror());
  HostCudaModule host(module.launches, handle);
  for (const CudaLaunch &launch : module.launches) {
    std::string name = "ucp_host_" + launch.kernel;
    auto entry = reinterpret_cast<Entry>(dlsym(handle, name.c_str()));
    if (!entry)
      return fail("the host library lacks " + name);
    host.entries.push_back(entry);
  }
  return std::move(host);
}

HostCudaModule::HostCudaModule(std::vector<CudaLaunch> launches, void *library)
    : launches(std::move(launches)), library(library) {}

HostCudaModule::HostCudaModule(HostCudaModule &&other)
    : launches(std::move(other.launches)), entries(std::move(other.entries)),
      library(other.library) {
  other.library = nullptr;
}

HostCudaModule::~HostCudaModule() {
  if (library)
    dlclose(library);
}

void HostCudaModule::run(size_t index, const ProgramBuffers &buffers,
                         std::optional<CudaGrid> grid) const {
  for (auto [launch, entry] : llvm::zip_equal(launches, entries)) {
    if (launch.program != index || launch.units == 0)
      continue;
    CudaGrid shape = grid.value_or(getLaunchGrid(launch.units));
    const void *source = launch.sourceBuffer >= 0
                             ? buffers.sources.at(launch.sourceBuffer)
                             : nullptr;
    entry(shape.blocks, shape.threadsPerBlock, source,
          buffers.targets.at(launch.targetBuffer));
  }
}

//===- CudaHostEmulation.cpp - Generated kernels run on the host ----------===//

#include "CudaHostEmulation.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"

#include <dlfcn.h>

using namespace ucp;
using namespace ucp::testing;

llvm::Expected<HostCudaModule>
HostCudaModule::compile(const CudaModule &module) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("ucp-cuda-host", dir))
    return makeError("cannot create a temporary directory: " + ec.message());
  // The library stays loaded after its file is gone.
  auto cleanUp =
      llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(dir); });
  std::string library = (dir + "/kernels.so").str(), log;
  if (!compileKernelsForHost(module.source, library, log))
    return makeError("the generated kernels do not compile for the host:\n" +
                     log);
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return makeError(llvm::Twine("cannot load ") + library + ": " + dlerror());
  HostCudaModule host(module.launches, handle);
  for (const CudaLaunch &launch : module.launches) {
    std::string name = getHostEntryName(launch.kernel);
    auto entry = reinterpret_cast<HostKernelEntry>(dlsym(handle, name.c_str()));
    if (!entry)
      return makeError("the host library lacks " + name);
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
    // The buffer table, and the argument as cuLaunchKernel takes it: a
    // pointer to it.
    std::vector<void *> table;
    for (int64_t rank : launch.sourceBuffers)
      table.push_back(const_cast<void *>(buffers.sources.at(rank)));
    for (int64_t rank : launch.targetBuffers)
      table.push_back(buffers.targets.at(rank));
    void *addresses = table.data();
    void *arguments[] = {&addresses};
    entry(shape.blocks, shape.threadsPerBlock, arguments);
  }
}

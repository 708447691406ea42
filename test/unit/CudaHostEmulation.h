//===- CudaHostEmulation.h - Generated kernels run on the host --*- C++ -*-===//
//
// An emitted CUDA module compiled for the host (HostKernels.h) and loaded,
// with launches run as the CUDA executor runs them. That checks the
// generated code's logic (descriptor tables, unit decoding, 16-byte
// vectors, the grid-stride loop, fills) on machines with no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TEST_UNIT_CUDAHOSTEMULATION_H
#define UCP_TEST_UNIT_CUDAHOSTEMULATION_H

#include "HostKernels.h"
#include "ucp/Engine/CopyProgramToCuda.h"
#include "ucp/Engine/CpuExecutor.h"

#include "llvm/Support/Error.h"

namespace ucp::testing {

/// An emitted module compiled into a shared library of the host.
class HostCudaModule {
public:
  /// Compiles `module` in a fresh temporary directory; the error carries
  /// the compiler's output.
  static llvm::Expected<HostCudaModule> compile(const CudaModule &module);

  HostCudaModule(HostCudaModule &&other);
  ~HostCudaModule();

  /// Runs the launch of program `index` on `buffers` with `grid` (by
  /// default the grid the CUDA executor uses).
  void run(size_t index, const ProgramBuffers &buffers,
           std::optional<CudaGrid> grid = std::nullopt) const;

private:
  HostCudaModule(std::vector<CudaLaunch> launches, void *library);

  std::vector<CudaLaunch> launches;
  std::vector<HostKernelEntry> entries;
  void *library = nullptr;
};

} // namespace ucp::testing

#endif // UCP_TEST_UNIT_CUDAHOSTEMULATION_H

//===- CudaHostEmulation.h - Generated kernels run on the host --*- C++ -*-===//
//
// Compiles the CUDA source emitted for copy programs as plain C++ with the
// host compiler, behind a prelude that defines the CUDA built-ins it uses
// (blockIdx, threadIdx, blockDim, gridDim), and runs a launch
// by calling its kernel once per (block, thread) of the grid. The kernels
// share nothing between threads, so running the threads one after another
// computes exactly what the GPU computes, except for the arithmetic of
// scaled elements, which here is the host's. That checks the generated
// code's logic (descriptor tables, unit decoding, 16-byte vectors, the
// grid-stride loop, fills) on machines with no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TEST_CUDAHOSTEMULATION_H
#define UCP_TEST_CUDAHOSTEMULATION_H

#include "ucp/Conversion/CopyProgramToCuda.h"
#include "ucp/Runtime/CpuExecutor.h"

#include "llvm/Support/Error.h"

namespace ucp::testing {

/// An emitted module compiled into a shared library of the host.
class HostCudaModule {
public:
  /// Compiles `module` with the C++ compiler the project was built with,
  /// in a fresh temporary directory; the error carries the compiler's
  /// output.
  static llvm::Expected<HostCudaModule> compile(const CudaModule &module);

  HostCudaModule(HostCudaModule &&other);
  ~HostCudaModule();

  /// Runs every launch of program `index` on `buffers` with `grid` (by
  /// default the grid the CUDA executor uses), in the executor's order.
  void run(size_t index, const ProgramBuffers &buffers,
           std::optional<CudaGrid> grid = std::nullopt) const;

private:
  HostCudaModule(std::vector<CudaLaunch> launches, void *library);

  using Entry = void (*)(unsigned blocks, unsigned threads, const void *src,
                         void *dst);
  std::vector<CudaLaunch> launches;
  std::vector<Entry> entries;
  void *library = nullptr;
};

} // namespace ucp::testing

#endif // UCP_TEST_CUDAHOSTEMULATION_H

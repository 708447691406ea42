//===- CudaExecutor.h - Running copy programs on an NVIDIA GPU --*- C++ -*-===//
//
// Compiles the CUDA source emitted for copy programs with NVRTC at run time
// and launches it through the CUDA driver API. Both libraries are loaded
// when first needed (dlopen), so the tools build and run on machines
// without CUDA and say clearly what is missing when asked for a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_RUNTIME_CUDAEXECUTOR_H
#define UCP_RUNTIME_CUDAEXECUTOR_H

#include "ucp/Conversion/CopyProgramToCuda.h"
#include "ucp/Runtime/CpuExecutor.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace ucp {

/// Compiles `source` to PTX for the virtual architecture `arch`
/// ("compute_90") with NVRTC; the error carries NVRTC's log.
llvm::Expected<std::string> compileCudaToPtx(const std::string &source,
                                             const std::string &arch);

/// A GPU ready to run copy programs of one element type.
class CudaExecutor {
public:
  /// Loads the driver, picks device 0 and compiles `programs`' kernels for
  /// it. Fails with a clear message when there is no driver or no device.
  static llvm::Expected<std::unique_ptr<CudaExecutor>>
  create(llvm::ArrayRef<std::pair<std::string, CopyProgram>> programs,
         DType type);
  ~CudaExecutor();

  /// Runs program `index` on host `buffers` of `elements` elements each:
  /// sources are copied to the device, kernels launched, targets copied
  /// back.
  llvm::Error run(size_t index, const CopyProgram &program,
                  const ProgramBuffers &buffers);

  struct State;

private:
  explicit CudaExecutor(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

} // namespace ucp

#endif // UCP_RUNTIME_CUDAEXECUTOR_H

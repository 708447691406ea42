//===- CudaExecutor.h - The GPU as an executor ------------------*- C++ -*-===//
//
// Runs copy programs on host buffers with generated CUDA kernels
// (CudaKernels): prepare compiles one module per element type for the
// programs it is given, each at its run's scale power; execute uploads a
// run's sources, launches its kernels and copies its targets back.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_CUDAEXECUTOR_H
#define UCP_ENGINE_CUDAEXECUTOR_H

#include "ucp/Engine/Executor.h"

#include <deque>
#include <memory>
#include <tuple>

namespace ucp {

class CudaKernels;

/// The GPU as an executor over host buffers.
class CudaExecutor final : public Executor {
public:
  CudaExecutor();
  ~CudaExecutor() override;

  /// Compiles the kernels of every run's program (at its scale power), one
  /// module per element type. Fails with a clear message when there is no
  /// driver or no device.
  llvm::Error prepare(llvm::ArrayRef<ProgramRun> runs) override;
  /// Runs programs prepared before.
  llvm::Error execute(llvm::ArrayRef<ProgramRun> batch) override;
  /// What the kernels were compiled for: "sm_90" (machine code) or
  /// "compute_86" (PTX for a GPU newer than NVRTC); "" before prepare.
  const std::string &getArchitecture() const { return architecture; }

private:
  using Key = std::tuple<const CopyProgram *, DType, int>;
  std::map<DType, std::unique_ptr<CudaKernels>> modules;
  /// Each prepared program's index in its type's module, and the program
  /// it compiled (its scales raised).
  std::map<Key, std::pair<size_t, const CopyProgram *>> prepared;
  std::deque<CopyProgram> raised;
  std::string architecture;
};

} // namespace ucp

#endif // UCP_ENGINE_CUDAEXECUTOR_H

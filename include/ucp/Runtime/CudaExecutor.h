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

#include "ucp/Runtime/CopyProgramToCuda.h"
#include "ucp/Runtime/CpuExecutor.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace ucp {

/// Compiles `source` to PTX for the virtual architecture `arch`
/// ("compute_90") with NVRTC; the error carries NVRTC's log.
llvm::Expected<std::string> compileCudaToPtx(const std::string &source,
                                             const std::string &arch);

/// Kernels NVRTC compiled for one GPU.
struct CompiledKernels {
  /// A cubin for "sm_NN", PTX for "compute_NN".
  std::string image;
  std::string architecture;
};

/// Compiles `source` for a GPU of compute capability `major`.`minor`: to
/// machine code where NVRTC supports that architecture, so that loading it
/// needs neither the driver's compiler nor a driver as new as NVRTC; for a
/// GPU newer than NVRTC, to PTX for the newest architecture below it, which
/// the driver compiles when loading. An NVRTC older than 11.2 cannot list
/// its architectures and gets the GPU's own as PTX. Fails, naming both,
/// when NVRTC supports nothing at or below the GPU.
llvm::Expected<CompiledKernels> compileCudaForDevice(const std::string &source,
                                                     int major, int minor);

/// Times of one program on the GPU, against a device-to-device memcpy of
/// the same bytes.
struct CudaTiming {
  /// Bytes of every target buffer: what one run writes.
  int64_t bytes = 0;
  /// Seconds of one run of the program's kernels, buffers on the device.
  double kernelSeconds = 0;
  /// Seconds of one cuMemcpyDtoD of `bytes`.
  double memcpySeconds = 0;
};

/// A GPU ready to run copy programs of one element type.
class CudaExecutor {
public:
  /// Loads the driver, picks device 0 and compiles `programs`' kernels for
  /// it (decoding units as `unitIndex` says). Fails with a clear message when
  /// there is no driver or no device.
  static llvm::Expected<std::unique_ptr<CudaExecutor>>
  create(llvm::ArrayRef<std::pair<std::string, CopyProgram>> programs,
         DType type, CudaUnitIndex unitIndex = CudaUnitIndex::Narrowest);
  ~CudaExecutor();

  /// What the kernels were compiled for: "sm_90" (machine code) or
  /// "compute_86" (PTX the driver compiled).
  const std::string &getArchitecture() const;

  /// Runs program `index` on host `buffers` of `elements` elements each:
  /// sources are copied to the device, kernels launched, targets copied
  /// back.
  llvm::Error run(size_t index, const CopyProgram &program,
                  const ProgramBuffers &buffers);

  /// Times program `index` with its buffers on the device (CUDA events
  /// around `repeats` runs after a warm-up), copies the targets back to
  /// `buffers`, and times a device-to-device memcpy of the same bytes.
  llvm::Expected<CudaTiming> time(size_t index, const CopyProgram &program,
                                  const ProgramBuffers &buffers, int repeats);

  struct State;

private:
  struct DeviceBuffers;
  explicit CudaExecutor(std::unique_ptr<State> state);
  /// Fails with `what` and the driver's message unless `result` is 0.
  llvm::Error check(int result, const char *what) const;
  /// The launch of program `index`; null when it writes nothing.
  const CudaLaunch *findLaunch(size_t index) const;
  /// Copies the sources of `buffers` to the device, allocates the targets
  /// and uploads the buffer table of program `index`'s kernel.
  llvm::Error upload(size_t index, const CopyProgram &program,
                     const ProgramBuffers &buffers,
                     DeviceBuffers &device) const;
  /// Launches program `index`'s kernel (asynchronously).
  llvm::Error launch(size_t index, const DeviceBuffers &device) const;
  /// Copies the targets back into `buffers`.
  llvm::Error download(const CopyProgram &program,
                       const ProgramBuffers &buffers,
                       const DeviceBuffers &device) const;
  std::unique_ptr<State> state;
};

} // namespace ucp

#endif // UCP_RUNTIME_CUDAEXECUTOR_H

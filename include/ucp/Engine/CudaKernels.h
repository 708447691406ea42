//===- CudaKernels.h - Copy programs as kernels on a GPU -------*- C++ -*-===//
//
// Compiles the CUDA source emitted for copy programs with NVRTC at run time
// and launches it through the CUDA driver API on a CudaDevice. Both
// libraries are loaded when first needed (dlopen), so the tools build and
// run on machines without CUDA and say clearly what is missing when asked
// for a GPU. Programs run either on host buffers (uploaded, run, copied
// back) or on buffers already on the GPU, queued on its default stream.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_CUDAKERNELS_H
#define UCP_ENGINE_CUDAKERNELS_H

#include "ucp/Engine/CopyProgramToCuda.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/CudaDevice.h"

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

/// A program's kernel launch on buffers already on the GPU, its buffer
/// table uploaded: CudaKernels::enqueue queues it without waiting.
struct DeviceLaunch {
  size_t index = 0;
  /// The table's address; 0 where the program writes nothing.
  DeviceAddress table = 0;
};

/// A GPU ready to run copy programs of one element type.
class CudaKernels {
public:
  /// Compiles `programs`' kernels (decoding units as `unitIndex` says) for
  /// `device`, or GPU 0 when null. Fails with a clear message when there
  /// is no driver or no device.
  static llvm::Expected<std::unique_ptr<CudaKernels>>
  create(llvm::ArrayRef<std::pair<std::string, CopyProgram>> programs,
         DType type, CudaUnitIndex unitIndex = CudaUnitIndex::Narrowest,
         std::shared_ptr<CudaDevice> device = nullptr);
  ~CudaKernels();

  /// What the kernels were compiled for: "sm_90" (machine code) or
  /// "compute_86" (PTX the driver compiled).
  const std::string &getArchitecture() const;
  const std::shared_ptr<CudaDevice> &getDevice() const;

  /// Uploads the buffer table of program `index` on `buffers` (GPU
  /// memory, every buffer its kernel reads or writes, each aligned to
  /// kDeviceBufferAlignment) into `memory`. Uploading waits for the GPU,
  /// so prepare every launch of a task before queuing any of it.
  llvm::Expected<DeviceLaunch> prepare(size_t index,
                                       const DeviceProgramBuffers &buffers,
                                       CudaMemory &memory) const;
  /// Queues `launch` on the GPU's default stream, after what is queued
  /// there already; CudaDevice::isIdle tells when it has run.
  llvm::Error enqueue(const DeviceLaunch &launch) const;

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
  struct StagedRun;
  explicit CudaKernels(std::unique_ptr<State> state);
  /// Fails with `what` and the driver's message unless `result` is 0.
  llvm::Error check(int result, const char *what) const;
  /// The launch of program `index`; null when it writes nothing.
  const CudaLaunch *findLaunch(size_t index) const;
  /// Copies the sources of `buffers` to the device, allocates the targets
  /// and prepares the launch of program `index`'s kernel.
  llvm::Error upload(size_t index, const CopyProgram &program,
                     const ProgramBuffers &buffers, StagedRun &staged) const;
  /// Copies the targets back into `buffers`.
  llvm::Error download(const CopyProgram &program,
                       const ProgramBuffers &buffers,
                       const StagedRun &staged) const;
  std::unique_ptr<State> state;
};

} // namespace ucp

#endif // UCP_ENGINE_CUDAKERNELS_H

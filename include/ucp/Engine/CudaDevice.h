//===- CudaDevice.h - One NVIDIA GPU, through the driver API ----*- C++ -*-===//
//
// A GPU opened through the CUDA driver, which is loaded when first needed
// (dlopen), so the tools build and run on machines without CUDA: its
// primary context, its memory, and the default stream that the copy
// kernels (CudaKernels.h) and NCCL's transfers (ucp/Distributed/
// NcclTransfer.h) are queued on, in order.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_CUDADEVICE_H
#define UCP_ENGINE_CUDADEVICE_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace ucp {

/// An address in a GPU's memory: CUDA's CUdeviceptr, whose type is
/// unsigned long long exactly (the driver's entry points are called through
/// pointers of that type; another 64-bit type is a different function type).
using DeviceAddress = unsigned long long;

/// Buffers of a copy program in GPU memory, by rank: sources are read,
/// targets written. Each starts 32-byte aligned, as allocations do: the
/// kernels move aligned runs as 16- and 32-byte vectors.
struct DeviceProgramBuffers {
  std::map<int64_t, DeviceAddress> sources;
  std::map<int64_t, DeviceAddress> targets;
};

/// The alignment every DeviceProgramBuffers address must have.
constexpr uint64_t kDeviceBufferAlignment = 32;

/// One GPU, its primary context current on the thread that opened it.
class CudaDevice {
public:
  /// Loads the driver and opens GPU `ordinal`. Fails with a clear message
  /// when there is no driver, no such device, or no context.
  static llvm::Expected<std::shared_ptr<CudaDevice>> open(int ordinal = 0);
  /// How many GPUs the driver sees; an error when there is no driver.
  static llvm::Expected<int> getDeviceCount();
  ~CudaDevice();

  int getOrdinal() const;
  /// The compute capability, major then minor (9 and 0 for an H200).
  std::pair<int, int> getComputeCapability() const;

  /// Allocates `bytes` (at least one) of this GPU's memory; free it with
  /// `free` (CudaMemory does).
  llvm::Expected<DeviceAddress> allocate(size_t bytes) const;
  void free(DeviceAddress address) const;
  llvm::Error copyToDevice(DeviceAddress to, const void *from,
                           size_t bytes) const;
  llvm::Error copyToHost(void *to, DeviceAddress from, size_t bytes) const;
  /// Whether everything queued on the default stream has finished; an
  /// error when some of it failed.
  llvm::Expected<bool> isIdle() const;
  /// Waits for everything queued on this GPU.
  llvm::Error synchronize() const;

  struct State;
  const State &getState() const { return *state; }

private:
  explicit CudaDevice(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// GPU memory allocated for one task, freed when it goes out of scope.
class CudaMemory {
public:
  explicit CudaMemory(std::shared_ptr<CudaDevice> device)
      : device(std::move(device)) {}
  CudaMemory(const CudaMemory &) = delete;
  CudaMemory &operator=(const CudaMemory &) = delete;
  ~CudaMemory();

  /// Allocates `bytes` (at least one); the error names `bytes`.
  llvm::Expected<DeviceAddress> allocate(size_t bytes);
  const std::shared_ptr<CudaDevice> &getDevice() const { return device; }

private:
  std::shared_ptr<CudaDevice> device;
  std::vector<DeviceAddress> owned;
};

} // namespace ucp

#endif // UCP_ENGINE_CUDADEVICE_H

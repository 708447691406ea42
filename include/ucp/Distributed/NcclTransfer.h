//===- NcclTransfer.h - Transfers across GPUs with NCCL ---------*- C++ -*-===//
//
// The MPI transfer's plan run on GPU buffers (docs/Distributed.md): every
// process drives one GPU, the shards of the ranks it owns in that GPU's
// memory. The messages are the MPI transport's (ExchangePlan), sent with
// ncclSend/ncclRecv in one NCCL group per batch; the generated copy
// kernels pack and unpack strided views and run the local copies, all
// queued in order on the GPU's default stream. MPI carries the control:
// the NCCL communicator's id, agreements, and the bounded waits. NCCL and
// the CUDA driver are loaded at run time.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DISTRIBUTED_NCCLTRANSFER_H
#define UCP_DISTRIBUTED_NCCLTRANSFER_H

#include "ucp/Distributed/MpiTransfer.h"
#include "ucp/Engine/CudaDevice.h"

struct ncclComm;

namespace ucp {

struct NcclLibrary;

/// One parameter's copies as one process runs them on its GPU.
struct DeviceProgramRun {
  const CopyProgram *program = nullptr;
  /// The ranks this process holds, in its GPU's memory.
  DeviceProgramBuffers buffers;
  DType type = DType::F32;
  /// The power of the scale the moved tensor carries.
  int scalePower = 1;
};

struct NcclGroupOptions {
  /// Timeouts and batch size, as for MPI; faults are not injected.
  MpiGroupOptions control;
  /// The GPU to drive; -1: the process's rank among those on its node,
  /// modulo the GPUs there.
  int deviceOrdinal = -1;
};

/// The processes of an MPI communicator, one GPU each, as one NCCL
/// communicator.
class NcclGroup {
public:
  /// Collective over `comm`: opens each process's GPU and joins the NCCL
  /// communicator. Fails on every process when one cannot.
  static llvm::Expected<std::unique_ptr<NcclGroup>>
  create(MPI_Comm comm, ProcessOwnership ownership, NcclGroupOptions options);
  ~NcclGroup();

  /// The MPI side: agreements, reductions, what each process holds.
  MpiGroup &getControl() { return *control; }
  /// The GPU this process drives; the buffers of execute live there.
  const std::shared_ptr<CudaDevice> &getDevice() const { return device; }

  /// Collective: runs every program of `batch` on the buffers each process
  /// holds, moving what crosses processes through NCCL. Returns when the
  /// GPU has finished, or fails once the timeout passes (the communicator
  /// is then aborted and the group broken).
  llvm::Error execute(llvm::ArrayRef<DeviceProgramRun> batch);

  /// Bytes this process has sent to other processes so far.
  int64_t getBytesSent() const { return bytesSent; }
  bool isBroken() const { return broken; }

private:
  NcclGroup() = default;
  /// A message buffer of at least `bytes` in GPU memory for what is packed
  /// or staged for (from) `peer`, kept between batches.
  llvm::Expected<DeviceAddress> getMessageBuffer(int peer, bool send,
                                                 int64_t bytes);
  /// Waits until everything queued on the GPU has finished, the
  /// communicator reports an error, or the timeout passes.
  llvm::Error waitForDevice(llvm::StringRef what);

  struct DeviceBuffer {
    DeviceAddress address = 0;
    int64_t capacity = 0;
  };

  std::unique_ptr<MpiGroup> control;
  ProcessOwnership ownership;
  NcclGroupOptions options;
  std::shared_ptr<CudaDevice> device;
  const NcclLibrary *nccl = nullptr;
  ::ncclComm *comm = nullptr;
  std::map<int, DeviceBuffer> sendBuffers, receiveBuffers;
  int64_t bytesSent = 0;
  bool broken = false;

  friend class NcclExchange;
};

} // namespace ucp

#endif // UCP_DISTRIBUTED_NCCLTRANSFER_H

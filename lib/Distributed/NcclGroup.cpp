//===- NcclGroup.cpp - The processes of MPI, one GPU each, over NCCL ------===//

#include "ucp/Distributed/NcclTransfer.h"
#include "ucp/Support/Error.h"

#include "NcclLibrary.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <thread>

using namespace ucp;

/// This process's rank among the processes of `comm` on its node
/// (collective).
static int getLocalRank(MPI_Comm comm) {
  int rank = 0, local = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

/// Opens the GPU `options` names, or the local rank's.
static llvm::Expected<std::shared_ptr<CudaDevice>>
openDevice(const NcclGroupOptions &options, int localRank) {
  int ordinal = options.deviceOrdinal;
  if (ordinal < 0) {
    llvm::Expected<int> count = CudaDevice::getDeviceCount();
    if (!count)
      return count.takeError();
    if (*count == 0)
      return makeError("the CUDA driver sees no GPU");
    ordinal = localRank % *count;
  }
  return CudaDevice::open(ordinal);
}

llvm::Expected<std::unique_ptr<NcclGroup>>
NcclGroup::create(MPI_Comm comm, ProcessOwnership ownership,
                  NcclGroupOptions options) {
  llvm::Expected<std::unique_ptr<MpiGroup>> control =
      MpiGroup::create(comm, ownership, options.control);
  if (!control)
    return control.takeError();
  std::unique_ptr<NcclGroup> group(new NcclGroup);
  group->control = std::move(*control);
  group->ownership = std::move(ownership);
  group->options = options;
  MpiGroup &mpi = *group->control;
  int localRank = getLocalRank(comm);
  // Every process learns whether all have NCCL and a GPU before any joins.
  llvm::Error ready = [&]() -> llvm::Error {
    llvm::Expected<const NcclLibrary &> nccl = NcclLibrary::get();
    if (!nccl)
      return nccl.takeError();
    group->nccl = &*nccl;
    llvm::Expected<std::shared_ptr<CudaDevice>> device =
        openDevice(options, localRank);
    if (!device)
      return device.takeError();
    group->device = std::move(*device);
    return llvm::Error::success();
  }();
  if (llvm::Error error = mpi.agree(std::move(ready)))
    return std::move(error);
  ncclUniqueId id{};
  llvm::Error made = llvm::Error::success();
  if (mpi.getProcess() == 0)
    if (ncclResult_t result = group->nccl->getUniqueId(&id))
      made = group->nccl->fail(result, "to make the communicator's id");
  if (llvm::Error error = mpi.agree(std::move(made)))
    return std::move(error);
  if (llvm::Error error = mpi.broadcast({id.internal, sizeof id.internal}, 0))
    return std::move(error);
  llvm::Error joined = llvm::Error::success();
  if (ncclResult_t result = group->nccl->commInitRank(
          &group->comm, mpi.getProcessCount(), id, mpi.getProcess())) {
    group->comm = nullptr;
    joined = group->nccl->fail(result, "to join the communicator");
  }
  if (llvm::Error error = mpi.agree(std::move(joined)))
    return std::move(error);
  return std::move(group);
}

NcclGroup::~NcclGroup() {
  for (auto *buffers : {&sendBuffers, &receiveBuffers})
    for (auto &[peer, buffer] : *buffers)
      device->free(buffer.address);
  if (comm)
    (broken ? nccl->commAbort : nccl->commDestroy)(comm);
}

llvm::Expected<DeviceAddress> NcclGroup::getMessageBuffer(int peer, bool send,
                                                          int64_t bytes) {
  // Kept between batches: allocating synchronises the GPU.
  DeviceBuffer &buffer = (send ? sendBuffers : receiveBuffers)[peer];
  if (buffer.capacity >= bytes)
    return buffer.address;
  if (buffer.address)
    device->free(buffer.address);
  buffer = DeviceBuffer();
  llvm::Expected<DeviceAddress> address =
      device->allocate(std::max<int64_t>(bytes, 1));
  if (!address)
    return address.takeError();
  buffer = {*address, bytes};
  return *address;
}

llvm::Error NcclGroup::waitForDevice(llvm::StringRef what) {
  using Clock = std::chrono::steady_clock;
  double seconds = options.control.timeoutSeconds;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(seconds));
  for (unsigned polls = 0;; ++polls) {
    // An error first: the stream of a failed transfer may look idle.
    ncclResult_t state = ncclSuccess;
    ncclResult_t result = nccl->commGetAsyncError(comm, &state);
    if (result == ncclSuccess && state != ncclInProgress)
      result = state;
    llvm::Error error = llvm::Error::success();
    if (result != ncclSuccess) {
      error = nccl->fail(result, "while " + what);
    } else {
      llvm::Expected<bool> idle = device->isIdle();
      if (!idle || *idle)
        return idle.takeError();
      if (Clock::now() > deadline)
        error = makeError("no answer within " + llvm::formatv("{0}", seconds) +
                          " s while " + what +
                          " (a process died or hangs); giving up");
    }
    if (error) {
      // The transfers in flight never end: only aborting frees the GPU.
      broken = true;
      return error;
    }
    // As MpiGroup's waits: spin briefly, then yield the core.
    if (polls > 256)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

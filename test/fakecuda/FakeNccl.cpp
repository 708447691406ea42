//===- FakeNccl.cpp - A stand-in NCCL over MPI, on host memory ------------===//
//
// libnccl.so.2 for tests on machines with no GPU, beside the stand-in
// driver (whose device memory is host memory): a communicator is the MPI
// processes that joined with one id, and each group's sends and receives
// travel as MPI messages when the group ends, which returns once they have
// all arrived (real NCCL only queues them on the stream). Sends and
// receives to one peer match in the order they were issued, as in NCCL.
// It needs MPI initialised by the process, as the transport's callers do.
// UCP_FAKE_NCCL_FAIL=<call> makes that call fail with ncclSystemError, or
// for ncclCommGetAsyncError report a remote error (tests of how failures
// are reported).
//
//===----------------------------------------------------------------------===//

#include "NcclTypes.h"

#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unistd.h>
#include <vector>

struct ncclComm {
  MPI_Comm comm;
};

namespace {
struct Operation {
  bool send;
  void *data;
  size_t bytes;
  int peer;
  ncclComm_t comm;
};

std::vector<Operation> pending;
int groupDepth = 0;
std::atomic<unsigned> idsMade{0};

bool shouldFail(const char *call) {
  const char *failing = std::getenv("UCP_FAKE_NCCL_FAIL");
  return failing && std::strcmp(failing, call) == 0;
}

/// Sends and receives everything pending, as MPI messages of the
/// communicator's processes.
ncclResult_t runPending() {
  std::vector<MPI_Request> requests;
  for (const Operation &op : pending) {
    if (op.bytes > static_cast<size_t>(INT_MAX))
      return ncclInvalidArgument; // Not a limit of NCCL: of this stand-in.
    MPI_Request request;
    int count = static_cast<int>(op.bytes);
    if (op.send)
      MPI_Isend(op.data, count, MPI_BYTE, op.peer, 0, op.comm->comm, &request);
    else
      MPI_Irecv(op.data, count, MPI_BYTE, op.peer, 0, op.comm->comm, &request);
    requests.push_back(request);
  }
  pending.clear();
  int result = MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                           MPI_STATUSES_IGNORE);
  return result == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}

ncclResult_t queue(Operation op) {
  int size = 0;
  if (!op.comm || !op.data || op.bytes == 0 ||
      MPI_Comm_size(op.comm->comm, &size) != MPI_SUCCESS || op.peer < 0 ||
      op.peer >= size)
    return ncclInvalidArgument;
  pending.push_back(op);
  return groupDepth ? ncclSuccess : runPending();
}
} // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version) {
  *version = 22800;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  if (shouldFail("ncclGetUniqueId"))
    return ncclSystemError;
  std::memset(id->internal, 0, sizeof id->internal);
  std::string text = std::to_string(getpid()) + ":" +
                     std::to_string(std::time(nullptr)) + ":" +
                     std::to_string(idsMade++);
  std::memcpy(id->internal, text.data(), text.size());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int ranks, ncclUniqueId id,
                              int rank) {
  if (shouldFail("ncclCommInitRank"))
    return ncclSystemError;
  // Every process of the world joins here, as in the tests: one split of
  // MPI_COMM_WORLD by the id's hash, ordered by the rank asked for.
  unsigned color = 0;
  for (char c : id.internal)
    color = color * 31 + static_cast<unsigned char>(c);
  auto *joined = new ncclComm;
  MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color & 0x7fffffff), rank,
                 &joined->comm);
  int size = 0, self = 0;
  MPI_Comm_size(joined->comm, &size);
  MPI_Comm_rank(joined->comm, &self);
  if (size != ranks || self != rank) {
    MPI_Comm_free(&joined->comm);
    delete joined;
    return ncclInvalidUsage;
  }
  *comm = joined;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  MPI_Comm_free(&comm->comm);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  // Its peers may be gone: nothing collective.
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *state) {
  *state = shouldFail("ncclCommGetAsyncError") ? ncclRemoteError : ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0)
    return ncclInvalidUsage;
  if (--groupDepth)
    return ncclSuccess;
  if (shouldFail("ncclGroupEnd")) {
    pending.clear();
    return ncclSystemError;
  }
  return runPending();
}

ncclResult_t ncclSend(const void *data, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t comm, cudaStream_t) {
  if (type != ncclUint8)
    return ncclInvalidArgument;
  return queue({true, const_cast<void *>(data), count, peer, comm});
}

ncclResult_t ncclRecv(void *data, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t) {
  if (type != ncclUint8)
    return ncclInvalidArgument;
  return queue({false, data, count, peer, comm});
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclSystemError:
    return "unhandled system error (the stand-in was told to fail)";
  case ncclInvalidArgument:
    return "invalid argument";
  case ncclInvalidUsage:
    return "invalid usage";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  default:
    return "error";
  }
}

} // extern "C"

//===- ProcessMemory.h - Reading another process's memory -------*- C++ -*-===//
//
// Single-copy transfers between the processes of one node: a process reads
// another's buffers into its own with process_vm_readv (Linux's
// cross-memory attach), views on both sides as lists of contiguous runs.
// No staging, and no copy through a shared-memory channel: each byte
// crosses once, where a message into a strided view costs an unpack
// besides the transport's own copy.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DISTRIBUTED_PROCESSMEMORY_H
#define UCP_LIB_DISTRIBUTED_PROCESSMEMORY_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

#include <mpi.h>

#include <set>
#include <sys/types.h>
#include <sys/uio.h>
#include <vector>

namespace ucp {

/// Elements of the longest contiguous run of `view` over `shape`: the
/// product of the trailing dimensions laid out in row-major order.
int64_t getRunElements(llvm::ArrayRef<int64_t> shape, const StridedView &view);

/// Appends the contiguous runs of `view` over `shape`, in row-major order,
/// in a buffer at `base` (an address in whichever process holds it).
void appendRuns(std::vector<iovec> &runs, uintptr_t base,
                llvm::ArrayRef<int64_t> shape, const StridedView &view,
                int64_t elementSize);

/// Copies the bytes of the runs `remote` of process `pid`, in order, into
/// the runs `local` of this process (the same number of bytes in both).
llvm::Error readProcessMemory(pid_t pid, llvm::ArrayRef<iovec> local,
                              llvm::ArrayRef<iovec> remote);

/// The processes of a communicator this process can read from.
struct NodePeers {
  /// Process ids, by process of the communicator.
  std::vector<pid_t> pids;
  /// The processes on this node, this one aside, when every process of the
  /// communicator could read from each of its node's others; else none.
  std::set<int> reachable;
};

/// Collective over `comm`: finds the processes on this node and tries a
/// read from each (the kernel may forbid it: ptrace restrictions).
NodePeers findNodePeers(MPI_Comm comm);

} // namespace ucp

#endif // UCP_LIB_DISTRIBUTED_PROCESSMEMORY_H

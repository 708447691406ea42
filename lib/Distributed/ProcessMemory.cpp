//===- ProcessMemory.cpp - Reading another process's memory ---------------===//

#include "ProcessMemory.h"
#include "ucp/Support/Error.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <unistd.h>

using namespace ucp;

int64_t ucp::getRunElements(llvm::ArrayRef<int64_t> shape,
                            const StridedView &view) {
  int64_t elements = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1)
      continue;
    if (view.strides[d] != elements)
      break;
    elements *= shape[d];
  }
  return elements;
}

void ucp::appendRuns(std::vector<iovec> &runs, uintptr_t base,
                     llvm::ArrayRef<int64_t> shape, const StridedView &view,
                     int64_t elementSize) {
  int64_t run = getRunElements(shape, view);
  // The dimensions outside the run: the trailing ones it covers are those
  // whose extents multiply to `run` (unit extents anywhere are skipped).
  std::vector<size_t> outer;
  int64_t covered = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1)
      continue;
    if (covered < run)
      covered *= shape[d];
    else
      outer.insert(outer.begin(), d);
  }
  for (int64_t extent : shape)
    if (extent == 0)
      return;
  std::vector<int64_t> index(outer.size(), 0);
  for (;;) {
    int64_t offset = view.offset;
    for (size_t i = 0; i < outer.size(); ++i)
      offset += index[i] * view.strides[outer[i]];
    runs.push_back({reinterpret_cast<void *>(base + offset * elementSize),
                    static_cast<size_t>(run * elementSize)});
    size_t i = outer.size();
    while (i > 0 && ++index[i - 1] == shape[outer[i - 1]])
      index[--i] = 0;
    if (i == 0)
      return;
  }
}

namespace {
/// A position in a list of runs, from which calls take their share.
struct RunCursor {
  llvm::ArrayRef<iovec> runs;
  size_t index = 0, offset = 0;

  /// Up to `count` runs from here, at most `limit` bytes; returns their bytes.
  size_t take(size_t count, size_t limit, std::vector<iovec> &out) const {
    out.clear();
    size_t bytes = 0;
    for (size_t i = index, skip = offset;
         i < runs.size() && out.size() < count && bytes < limit;
         ++i, skip = 0) {
      size_t length = std::min(runs[i].iov_len - skip, limit - bytes);
      out.push_back({static_cast<char *>(runs[i].iov_base) + skip, length});
      bytes += length;
    }
    return bytes;
  }

  void advance(size_t bytes) {
    while (bytes) {
      size_t step = std::min(bytes, runs[index].iov_len - offset);
      offset += step;
      bytes -= step;
      if (offset == runs[index].iov_len) {
        ++index;
        offset = 0;
      }
    }
  }
};
} // namespace

llvm::Error ucp::readProcessMemory(pid_t pid, llvm::ArrayRef<iovec> local,
                                   llvm::ArrayRef<iovec> remote) {
  constexpr size_t kMaxRuns = IOV_MAX;
  RunCursor to{local}, from{remote};
  std::vector<iovec> toRuns, fromRuns;
  while (to.index < local.size()) {
    size_t bytes = to.take(kMaxRuns, SSIZE_MAX, toRuns);
    bytes = from.take(kMaxRuns, bytes, fromRuns);
    bytes = to.take(kMaxRuns, bytes, toRuns);
    if (bytes == 0)
      break; // The other side's runs ran out first.
    ssize_t read = process_vm_readv(pid, toRuns.data(), toRuns.size(),
                                    fromRuns.data(), fromRuns.size(), 0);
    if (read != static_cast<ssize_t>(bytes))
      return makeError("cannot read the memory of process " +
                       std::to_string(pid) + " (a peer on this node): " +
                       (read < 0 ? std::strerror(errno) : "a short read"));
    to.advance(bytes);
    from.advance(bytes);
  }
  if (to.index < local.size() || from.index < remote.size())
    return makeError("the runs of a read differ in size");
  return llvm::Error::success();
}

/// What a process tells the others: its node (the process of the
/// communicator that leads it), its id, and where its probe lies.
struct PeerCard {
  int64_t leader, pid, probe;
};

NodePeers ucp::findNodePeers(MPI_Comm comm) {
  static const uint64_t probe = 0x75637020636d6121; // "ucp cma!"
  int self = 0, size = 0;
  MPI_Comm_rank(comm, &self);
  MPI_Comm_size(comm, &size);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, self, MPI_INFO_NULL, &node);
  MPI_Group nodeGroup, group;
  MPI_Comm_group(node, &nodeGroup);
  MPI_Comm_group(comm, &group);
  int first = 0, leader = 0;
  MPI_Group_translate_ranks(nodeGroup, 1, &first, group, &leader);
  MPI_Group_free(&nodeGroup);
  MPI_Group_free(&group);
  MPI_Comm_free(&node);
  PeerCard mine{leader, getpid(),
                static_cast<int64_t>(reinterpret_cast<uintptr_t>(&probe))};
  std::vector<PeerCard> cards(size);
  MPI_Allgather(&mine, 3, MPI_INT64_T, cards.data(), 3, MPI_INT64_T, comm);
  NodePeers peers;
  int readable = 1;
  for (int p = 0; p < size; ++p) {
    peers.pids.push_back(static_cast<pid_t>(cards[p].pid));
    if (p == self || cards[p].leader != leader)
      continue;
    uint64_t seen = 0;
    iovec to{&seen, sizeof seen};
    iovec from{reinterpret_cast<void *>(cards[p].probe), sizeof seen};
    if (process_vm_readv(cards[p].pid, &to, 1, &from, 1, 0) != sizeof seen ||
        seen != probe)
      readable = 0;
    peers.reachable.insert(p);
  }
  MPI_Allreduce(MPI_IN_PLACE, &readable, 1, MPI_INT, MPI_MIN, comm);
  if (!readable)
    peers.reachable.clear();
  return peers;
}

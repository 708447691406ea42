//===- MpiExchange.h - One batch of copies across processes -----*- C++ -*-===//
//
// The internals of MpiGroup::execute (MpiExchange.cpp says how a batch
// travels).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DISTRIBUTED_MPIEXCHANGE_H
#define UCP_LIB_DISTRIBUTED_MPIEXCHANGE_H

#include "ucp/Distributed/MpiTransfer.h"

namespace ucp {

/// Copies of one parameter that this process packs (or unpacks) between
/// its buffers and a contiguous stretch of the group's message buffer.
struct MessageRegion {
  size_t item = 0;
  std::vector<std::pair<const BufferPairCopies *, const StridedCopy *>> copies;
  int64_t elements = 0;
  /// Where the stretch starts in the message buffer.
  int64_t byteOffset = 0;
  /// Whether this side applies the copies' factors (the other copies
  /// elements unscaled, or not at all).
  bool scaleHere = false;
};

/// A message of its own: one long copy, contiguous on at least one side.
/// That side sends from (or receives into) its buffer directly; the other
/// stages it in the message buffer.
struct SeparateCopy {
  /// The staged copy (no copies when this side is direct).
  MessageRegion staged;
  char *direct = nullptr;
  int64_t bytes = 0;
};

/// What one batch moves between this process and one peer: the packed
/// part (copies too short or too strided to travel alone), then the
/// separate copies, each a message, in the same order on both sides.
struct PeerMessage {
  int peer = 0;
  std::vector<MessageRegion> packed;
  int64_t packedBytes = 0;
  std::vector<SeparateCopy> separate;
  /// Bytes of the message buffer: the packed part, then the staged copies.
  int64_t bufferBytes = 0;
  char *buffer = nullptr;
};

/// Messages a receiver waits for, and what it does once all have come.
struct Arrival {
  enum Kind { PackedPart, Staged, Direct } kind = PackedPart;
  PeerMessage *message = nullptr;
  const MessageRegion *staged = nullptr;
  size_t missing = 0;
};

/// One call of MpiGroup::execute.
class MpiExchange {
public:
  MpiExchange(MpiGroup &group, llvm::ArrayRef<ProgramRun> batch,
              unsigned threads)
      : group(group), batch(batch), threads(threads) {}

  llvm::Error run();

private:
  void planCopy(size_t item, const BufferPairCopies &pair,
                const StridedCopy &copy, bool sending, PeerMessage &message,
                MessageRegion &packed);
  void planMessages();
  /// Posts `bytes` at `data` as messages of at most 1 GiB; returns how many.
  size_t post(int peer, char *data, int64_t bytes, bool send,
              std::vector<MPI_Request> &requests);
  void postReceives();
  void postSends();
  void runLocalCopies();
  void unpack(const Arrival &arrival);
  llvm::Error receiveAndUnpack();
  /// Runs the copies of `region` between its parameter's buffers and the
  /// message `buffer`: packing when `pack`, else unpacking.
  void transfer(const MessageRegion &region, char *buffer, bool pack);

  MpiGroup &group;
  llvm::ArrayRef<ProgramRun> batch;
  unsigned threads;
  std::map<int, PeerMessage> sends, receives;
  std::vector<MPI_Request> sendRequests, receiveRequests;
  /// The arrival each receive request belongs to.
  std::vector<size_t> arrivalOf;
  std::vector<Arrival> arrivals;
};

} // namespace ucp

#endif // UCP_LIB_DISTRIBUTED_MPIEXCHANGE_H

//===- MpiExchange.h - One batch of copies across processes -----*- C++ -*-===//
//
// The internals of MpiGroup::execute (MpiExchange.cpp says how a batch
// travels).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DISTRIBUTED_MPIEXCHANGE_H
#define UCP_LIB_DISTRIBUTED_MPIEXCHANGE_H

#include "ExchangePlan.h"

namespace ucp {

/// Messages a receiver waits for, and what it does once all have come.
struct Arrival {
  /// NodeCopies: the addresses of the sender's buffers for the node copies.
  enum Kind { PackedPart, Staged, Direct, NodeCopies } kind = PackedPart;
  const PeerMessage *message = nullptr;
  const MessageRegion *staged = nullptr;
  char *buffer = nullptr;
  size_t missing = 0;
};

/// One call of MpiGroup::execute.
class MpiExchange {
public:
  MpiExchange(MpiGroup &group, llvm::ArrayRef<ProgramRun> batch);

  llvm::Error run();

private:
  /// Posts `bytes` at `data` as messages of at most 1 GiB; returns how many.
  size_t post(int peer, char *data, int64_t bytes, bool send,
              std::vector<MPI_Request> &requests);
  void postReceives();
  /// Tells the receivers of node copies where the source buffers lie, and
  /// waits to hear that from their senders.
  void postNodeCopies();
  void postSends();
  /// Reads the node copies of `message` from its sender, then tells it.
  void makeNodeCopies(const PeerMessage &message);
  void runLocalCopies();
  void unpack(const Arrival &arrival);
  llvm::Error receiveAndUnpack();
  /// The address of `span` in its parameter's buffers.
  char *getAddress(const BufferSpan &span, bool sending) const;
  /// Runs the copies of `region` between its parameter's buffers and the
  /// message `buffer`: packing when `pack`, else unpacking.
  void transfer(const MessageRegion &region, char *buffer, bool pack);

  MpiGroup &group;
  llvm::ArrayRef<ProgramRun> batch;
  unsigned threads;
  std::vector<ExchangeItem> items;
  ExchangePlan plan;
  std::vector<MPI_Request> sendRequests, receiveRequests;
  /// Node copies, by peer: the addresses sent and received, and the
  /// receivers' word that they have read them.
  std::map<int, std::vector<uint64_t>> ownAddresses, peerAddresses;
  std::map<int, char> copiedWords;
  std::vector<MPI_Request> copiedRequests;
  std::string nodeCopyFailure;
  /// The arrival each receive request belongs to.
  std::vector<size_t> arrivalOf;
  std::vector<Arrival> arrivals;
};

} // namespace ucp

#endif // UCP_LIB_DISTRIBUTED_MPIEXCHANGE_H

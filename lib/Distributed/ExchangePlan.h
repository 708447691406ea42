//===- ExchangePlan.h - What one batch moves between processes --*- C++ -*-===//
//
// The plan of one batch of copies across processes, shared by the
// transports (MPI on host buffers, NCCL on GPU buffers): which copies this
// process sends to and receives from each peer, in which messages, and
// where they sit in the message buffers. Every process derives it from the
// same programs and ownership, so both sides of a pair agree on every
// message without asking (ExchangePlan.cpp says how copies are routed).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DISTRIBUTED_EXCHANGEPLAN_H
#define UCP_LIB_DISTRIBUTED_EXCHANGEPLAN_H

#include "ucp/Distributed/MpiTransfer.h"

#include <optional>
#include <set>

namespace ucp {

/// One parameter's program and element type, as the plan sees it.
struct ExchangeItem {
  const CopyProgram *program = nullptr;
  DType type = DType::F32;
  /// The power of the scale the moved tensor carries: the region and local
  /// programs carry each copy's factor at it, and run at power 1.
  int scalePower = 1;
};

/// Copies of one parameter that this process packs (or unpacks) between
/// its buffers and a contiguous stretch of the message buffer of a peer.
struct MessageRegion {
  size_t item = 0;
  std::vector<std::pair<const BufferPairCopies *, const StridedCopy *>> copies;
  int64_t elements = 0;
  /// Where the stretch starts in the message buffer (64-byte aligned).
  int64_t byteOffset = 0;
  /// Whether this side applies the copies' factors (the other copies
  /// elements unscaled, or not at all).
  bool scaleHere = false;
};

/// A contiguous view of one of this process's buffers of a parameter.
struct BufferSpan {
  size_t item = 0;
  /// A source buffer when sending, a target buffer when receiving.
  int64_t buffer = 0;
  int64_t byteOffset = 0;
};

/// A message of its own: one long copy, contiguous on at least one side.
/// That side sends from (or receives into) its buffer directly; the other
/// stages it in the message buffer.
struct SeparateCopy {
  /// The staged copy (no copies when this side is direct).
  MessageRegion staged;
  std::optional<BufferSpan> direct;
  int64_t bytes = 0;
};

/// A copy between two processes of one node that the receiver makes
/// alone, reading the sender's memory into its own in one pass
/// (ProcessMemory.h). No message carries its elements.
struct NodeCopy {
  size_t item = 0;
  const BufferPairCopies *pair = nullptr;
  const StridedCopy *copy = nullptr;
};

/// What one batch moves between this process and one peer: the packed
/// part (copies too short or too strided to travel alone), then the
/// separate copies, each a message, in the same order on both sides; and
/// the node copies, in the same order on both sides too.
struct PeerMessage {
  int peer = 0;
  std::vector<MessageRegion> packed;
  int64_t packedBytes = 0;
  std::vector<SeparateCopy> separate;
  /// Bytes of the message buffer: the packed part, then the staged copies.
  int64_t bufferBytes = 0;
  std::vector<NodeCopy> nodeCopies;
};

/// Fails unless `ownership` names a process for every rank `program`
/// copies between or fills.
llvm::Error checkRanksOwned(const CopyProgram &program,
                            const ProcessOwnership &ownership);

/// The messages of one batch, from this process's side.
class ExchangePlan {
public:
  /// The plan of `process`, which with each of `nodePeers` (who count it
  /// among theirs) makes long copies into strided targets node copies.
  ExchangePlan(llvm::ArrayRef<ExchangeItem> items,
               const ProcessOwnership &ownership, int process,
               const std::set<int> &nodePeers = {});

  /// By peer: what this process sends, and what it receives.
  std::map<int, PeerMessage> sends, receives;

  /// The program that packs `region` into the message buffer (`pack`) or
  /// unpacks it from there. The message side is buffer 0, holding the
  /// region from its start; the other side's buffers are the parameter's.
  /// Its copies carry their factors at the item's scale power: it runs at
  /// power 1.
  CopyProgram getRegionProgram(const MessageRegion &region, bool pack) const;
  /// The copies and fills of parameter `item` that stay in this process,
  /// to run at power 1 as region programs do.
  CopyProgram getLocalProgram(size_t item) const;
  /// Bytes this process sends in the batch (node copies included).
  int64_t getBytesSent() const;

private:
  void planCopy(size_t item, const BufferPairCopies &pair,
                const StridedCopy &copy, bool sending, int peer,
                PeerMessage &message, MessageRegion &packed);
  void planParameter(size_t item);
  void placeStagedCopies();

  llvm::ArrayRef<ExchangeItem> items;
  const ProcessOwnership &ownership;
  int process;
  std::set<int> nodePeers;
};

/// The buffers of a region program (ExchangePlan::getRegionProgram): the
/// parameter's from `whole`, and the message side, buffer 0, at `region`.
/// For host (ProgramBuffers) and GPU (DeviceProgramBuffers) buffers alike.
template <typename Buffers, typename Address>
Buffers getRegionBuffers(const CopyProgram &program, const Buffers &whole,
                         Address region, bool pack) {
  Buffers buffers;
  if (pack) {
    for (const auto &[rank, elements] : program.sourceElements)
      buffers.sources[rank] = whole.sources.at(rank);
    buffers.targets[0] = region;
  } else {
    for (const auto &[rank, elements] : program.targetElements)
      buffers.targets[rank] = whole.targets.at(rank);
    buffers.sources[0] = region;
  }
  return buffers;
}

} // namespace ucp

#endif // UCP_LIB_DISTRIBUTED_EXCHANGEPLAN_H

//===- ExchangePlan.cpp - What one batch moves between processes ----------===//
//
// Per peer and batch, the messages of one stream, in the same order on both
// sides: first the packed part, then each separate copy. A long copy
// contiguous on one side at least travels as a message of its own, sent
// straight from the source buffer or received straight into the target
// buffer where that view is contiguous, staged in the message buffer where
// not: a column split costs one copy instead of two, a row split none.
// Every other copy (short, or strided on both sides) is packed by the
// sender and unpacked by the receiver. The side that copies first applies
// the scale. Both sides see every copy's two views, so they route it alike.
// Between two processes of one node that can reach each other's memory, a
// long unscaled copy from a contiguous source into a strided target would
// be received into a staging buffer and unpacked: it is a node copy
// instead, read by the receiver from the sender's buffer straight into its
// own in one pass (ProcessMemory.h). The other way round (a strided source)
// stays a message: the sender packs while the receiver copies, and a node
// copy made by the sender alone was measured slower (docs/Distributed.md).
//
//===----------------------------------------------------------------------===//

#include "ExchangePlan.h"
#include "ProcessMemory.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/MathExtras.h"

using namespace ucp;

/// A copy shorter than this is packed: a message of its own would cost
/// more than copying it.
static constexpr int64_t kMinSeparateBytes = int64_t(64) << 10;
/// A node copy's runs in the target are at least this long: shorter ones
/// cost the kernel more per byte than unpacking.
static constexpr int64_t kMinNodeCopyRunBytes = 512;
/// Where each stretch of a message buffer starts.
static constexpr uint64_t kRegionAlignment = 64;

static int64_t getCopyElements(const StridedCopy &copy) {
  return getNumElements(copy.shape).value_or(0);
}

/// Whether `view` covers `shape` contiguously, in row-major order.
static bool isContiguous(llvm::ArrayRef<int64_t> shape,
                         const StridedView &view) {
  return getRunElements(shape, view) == getNumElements(shape).value_or(0);
}

namespace {
/// How a copy between two processes travels; both sides decide alike.
struct Route {
  bool separate = false;
  /// With separate: whether the sender sends from the source buffer, and
  /// the receiver receives into the target buffer, without staging.
  bool sendDirect = false, receiveDirect = false;
};
} // namespace

static Route getRoute(const StridedCopy &copy, int64_t elementSize) {
  Route route;
  if (getCopyElements(copy) * elementSize < kMinSeparateBytes)
    return route;
  route.sendDirect = isContiguous(copy.shape, copy.source);
  // Someone must copy to scale.
  route.receiveDirect = isContiguous(copy.shape, copy.target) &&
                        (copy.scale == 1.0 || !route.sendDirect);
  route.separate = route.sendDirect || route.receiveDirect;
  return route;
}

llvm::Error ucp::checkRanksOwned(const CopyProgram &program,
                                 const ProcessOwnership &ownership) {
  auto owned = [](const std::vector<int64_t> &processes, int64_t rank) {
    return rank >= 0 && rank < static_cast<int64_t>(processes.size());
  };
  for (const BufferPairCopies &pair : program.pairs)
    if (!owned(ownership.sourceProcesses, pair.sourceBuffer) ||
        !owned(ownership.targetProcesses, pair.targetBuffer))
      return makeError("a program copies between ranks " +
                       std::to_string(pair.sourceBuffer) + " and " +
                       std::to_string(pair.targetBuffer) +
                       ", beyond the ranks the process ownership names");
  for (const StridedFill &fill : program.fills)
    if (!owned(ownership.targetProcesses, fill.targetBuffer))
      return makeError("a program fills rank " +
                       std::to_string(fill.targetBuffer) +
                       ", beyond the ranks the process ownership names");
  return llvm::Error::success();
}

/// Whether `copy` is a node copy between processes that can make one.
static bool isNodeCopy(const StridedCopy &copy, int64_t elementSize) {
  if (copy.scale != 1.0 ||
      getCopyElements(copy) * elementSize < kMinSeparateBytes ||
      !isContiguous(copy.shape, copy.source) ||
      isContiguous(copy.shape, copy.target))
    return false;
  return getRunElements(copy.shape, copy.target) * elementSize >=
         kMinNodeCopyRunBytes;
}

ExchangePlan::ExchangePlan(llvm::ArrayRef<ExchangeItem> items,
                           const ProcessOwnership &ownership, int process,
                           const std::set<int> &nodePeers)
    : items(items), ownership(ownership), process(process),
      nodePeers(nodePeers) {
  for (size_t item = 0; item < items.size(); ++item)
    planParameter(item);
  placeStagedCopies();
}

void ExchangePlan::planCopy(size_t item, const BufferPairCopies &pair,
                            const StridedCopy &copy, bool sending, int peer,
                            PeerMessage &message, MessageRegion &packed) {
  int64_t elementSize = getElementSize(items[item].type);
  if (nodePeers.count(peer) && isNodeCopy(copy, elementSize)) {
    message.nodeCopies.push_back({item, &pair, &copy});
    return;
  }
  Route route = getRoute(copy, elementSize);
  if (!route.separate) {
    packed.copies.push_back({&pair, &copy});
    packed.elements += getCopyElements(copy);
    return;
  }
  SeparateCopy separate;
  separate.bytes = getCopyElements(copy) * elementSize;
  if (sending ? route.sendDirect : route.receiveDirect) {
    const StridedView &view = sending ? copy.source : copy.target;
    separate.direct =
        BufferSpan{item, sending ? pair.sourceBuffer : pair.targetBuffer,
                   view.offset * elementSize};
  } else {
    separate.staged.item = item;
    separate.staged.copies.push_back({&pair, &copy});
    separate.staged.elements = getCopyElements(copy);
    // The sender scales when it stages; the receiver when the sender sent
    // the source's elements as they are.
    separate.staged.scaleHere = sending || route.sendDirect;
  }
  message.separate.push_back(std::move(separate));
}

void ExchangePlan::planParameter(size_t item) {
  const CopyProgram &program = *items[item].program;
  // This parameter's packed copies, by peer, on both sides.
  std::map<int, MessageRegion> out, in;
  for (const BufferPairCopies &pair : program.pairs) {
    int from = static_cast<int>(ownership.sourceProcesses[pair.sourceBuffer]);
    int to = static_cast<int>(ownership.targetProcesses[pair.targetBuffer]);
    if ((from == process) == (to == process))
      continue; // Local, or between two other processes.
    bool sending = from == process;
    int peer = sending ? to : from;
    MessageRegion &packed = (sending ? out : in)[peer];
    packed.item = item;
    packed.scaleHere = sending;
    PeerMessage &message = (sending ? sends : receives)[peer];
    for (const StridedCopy &copy : pair.copies)
      planCopy(item, pair, copy, sending, peer, message, packed);
  }
  int64_t elementSize = getElementSize(items[item].type);
  for (auto *side : {&out, &in})
    for (auto &[peer, region] : *side) {
      if (region.copies.empty())
        continue;
      PeerMessage &message = (side == &out ? sends : receives)[peer];
      region.byteOffset = llvm::alignTo(message.packedBytes, kRegionAlignment);
      message.packedBytes = region.byteOffset + region.elements * elementSize;
      message.packed.push_back(std::move(region));
    }
}

void ExchangePlan::placeStagedCopies() {
  // The staged copies follow the packed part in the message buffer.
  for (auto *side : {&sends, &receives})
    for (auto &[peer, message] : *side) {
      message.peer = peer;
      message.bufferBytes = message.packedBytes;
      for (SeparateCopy &separate : message.separate)
        if (!separate.direct) {
          separate.staged.byteOffset =
              llvm::alignTo(message.bufferBytes, kRegionAlignment);
          message.bufferBytes = separate.staged.byteOffset + separate.bytes;
        }
    }
}

CopyProgram ExchangePlan::getRegionProgram(const MessageRegion &region,
                                           bool pack) const {
  const CopyProgram &whole = *items[region.item].program;
  // The message side's views are contiguous, in order.
  CopyProgram program;
  int64_t offset = 0;
  for (auto [pair, copy] : region.copies) {
    StridedView packed{offset, getRowMajorStrides(copy->shape)};
    program.pairs.push_back(
        {pack ? pair->sourceBuffer : 0,
         pack ? 0 : pair->targetBuffer,
         {{copy->shape, pack ? copy->source : packed,
           pack ? packed : copy->target,
           region.scaleHere
               ? getCopyFactor(copy->scale, items[region.item].scalePower)
               : 1.0}}});
    offset += getCopyElements(*copy);
    if (pack)
      program.sourceElements[pair->sourceBuffer] =
          whole.sourceElements.at(pair->sourceBuffer);
    else
      program.targetElements[pair->targetBuffer] =
          whole.targetElements.at(pair->targetBuffer);
  }
  (pack ? program.targetElements : program.sourceElements)[0] = region.elements;
  return program;
}

CopyProgram ExchangePlan::getLocalProgram(size_t item) const {
  const CopyProgram &whole = *items[item].program;
  // checkRanksOwned has seen every rank.
  auto holds = [&](const std::vector<int64_t> &processes, int64_t rank) {
    return processes[rank] == process;
  };
  CopyProgram local;
  local.sourceElements = whole.sourceElements;
  local.targetElements = whole.targetElements;
  for (const BufferPairCopies &pair : whole.pairs)
    if (holds(ownership.sourceProcesses, pair.sourceBuffer) &&
        holds(ownership.targetProcesses, pair.targetBuffer)) {
      local.pairs.push_back(pair);
      for (StridedCopy &copy : local.pairs.back().copies)
        copy.scale = getCopyFactor(copy.scale, items[item].scalePower);
    }
  for (const StridedFill &fill : whole.fills)
    if (holds(ownership.targetProcesses, fill.targetBuffer))
      local.fills.push_back(fill);
  return local;
}

int64_t ExchangePlan::getBytesSent() const {
  int64_t bytes = 0;
  for (const auto &[peer, message] : sends) {
    bytes += message.packedBytes;
    for (const SeparateCopy &separate : message.separate)
      bytes += separate.bytes;
    for (const NodeCopy &copy : message.nodeCopies)
      bytes +=
          getCopyElements(*copy.copy) * getElementSize(items[copy.item].type);
  }
  return bytes;
}

//===- MpiExchange.cpp - One batch of copies across processes -------------===//
//
// Per peer and batch, the messages of one stream, in the same order on both
// sides (messages of one pair and tag do not overtake each other): first
// the packed part, then each separate copy. A long copy contiguous on one
// side at least travels as a message of its own, sent straight from the
// source buffer or received straight into the target buffer where that
// view is contiguous, staged in the group's message buffer where not: a
// column split costs one copy instead of two, a row split none. Every
// other copy (short, or strided on both sides) is packed by the sender with
// the CPU executor and unpacked the same way by the receiver. The side that
// copies first applies the scale. Both sides see every copy's two views,
// so they route it alike. Receives are posted first, local copies run
// while messages travel, and each message is unpacked as it arrives.
//
// MPI derived datatypes (an hindexed type over the runs of strided views,
// sent from MPI_BOTTOM) were measured too: Open MPI's shared-memory
// transport packs such types in small fragments, 2 to 5 times slower than
// packing here (docs/Distributed.md).
//
//===----------------------------------------------------------------------===//

#include "MpiExchange.h"

#include "llvm/Support/MathExtras.h"

using namespace ucp;

/// A copy shorter than this is packed: a message of its own would cost
/// more than copying it.
static constexpr int64_t kMinSeparateBytes = int64_t(64) << 10;
/// Messages carry at most this many bytes (MPI counts are ints).
static constexpr int64_t kMaxMessageBytes = int64_t(1) << 30;

static int64_t getCopyElements(const StridedCopy &copy) {
  return getNumElements(copy.shape).value_or(0);
}

/// Whether `view` covers `shape` contiguously, in row-major order.
static bool isContiguous(llvm::ArrayRef<int64_t> shape,
                         const StridedView &view) {
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && view.strides[d] != expected)
      return false;
    expected *= shape[d];
  }
  return true;
}

/// How a copy between two processes travels; both sides decide alike.
struct Route {
  bool separate = false;
  /// With separate: whether the sender sends from the source buffer, and
  /// the receiver receives into the target buffer, without staging.
  bool sendDirect = false, receiveDirect = false;
};

static Route getRoute(const StridedCopy &copy, int64_t elementSize) {
  Route route;
  if (getCopyElements(copy) * elementSize < kMinSeparateBytes)
    return route;
  route.sendDirect = isContiguous(copy.shape, copy.source);
  // Someone must copy to scale.
  route.receiveDirect = isContiguous(copy.shape, copy.target) &&
                        (copy.factor == 1.0 || !route.sendDirect);
  route.separate = route.sendDirect || route.receiveDirect;
  return route;
}

void MpiExchange::planCopy(size_t item, const BufferPairCopies &pair,
                           const StridedCopy &copy, bool sending,
                           PeerMessage &message, MessageRegion &packed) {
  const ProgramRun &run = batch[item];
  int64_t elementSize = getElementSize(run.type);
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
    char *buffer =
        sending
            ? static_cast<char *>(
                  const_cast<void *>(run.buffers.sources.at(pair.sourceBuffer)))
            : static_cast<char *>(run.buffers.targets.at(pair.targetBuffer));
    separate.direct = buffer + view.offset * elementSize;
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

void MpiExchange::planMessages() {
  const ProcessOwnership &owners = group.ownership;
  int self = group.process;
  for (auto [item, run] : llvm::enumerate(batch)) {
    // This parameter's packed copies, by peer, on both sides.
    std::map<int, MessageRegion> out, in;
    for (const BufferPairCopies &pair : run.program->pairs) {
      int from = static_cast<int>(owners.sourceProcesses[pair.sourceBuffer]);
      int to = static_cast<int>(owners.targetProcesses[pair.targetBuffer]);
      if ((from == self) == (to == self))
        continue; // Local, or between two other processes.
      bool sending = from == self;
      int peer = sending ? to : from;
      MessageRegion &packed = (sending ? out : in)[peer];
      packed.item = item;
      packed.scaleHere = sending;
      for (const StridedCopy &copy : pair.copies)
        planCopy(item, pair, copy, sending, (sending ? sends : receives)[peer],
                 packed);
    }
    int64_t elementSize = getElementSize(run.type);
    for (auto *side : {&out, &in})
      for (auto &[peer, region] : *side) {
        if (region.copies.empty())
          continue;
        PeerMessage &message = (side == &out ? sends : receives)[peer];
        region.byteOffset = llvm::alignTo(message.packedBytes, 64);
        message.packedBytes = region.byteOffset + region.elements * elementSize;
        message.packed.push_back(std::move(region));
      }
  }
  // The staged copies follow the packed part in the message buffer.
  for (auto *side : {&sends, &receives})
    for (auto &[peer, message] : *side) {
      message.peer = peer;
      message.bufferBytes = message.packedBytes;
      for (SeparateCopy &separate : message.separate)
        if (!separate.direct) {
          separate.staged.byteOffset = llvm::alignTo(message.bufferBytes, 64);
          message.bufferBytes = separate.staged.byteOffset + separate.bytes;
        }
    }
}

void MpiExchange::transfer(const MessageRegion &region, char *buffer,
                           bool pack) {
  const ProgramRun &run = batch[region.item];
  // The message side is buffer 0, its views contiguous in order.
  CopyProgram program;
  ProgramBuffers buffers;
  int64_t offset = 0;
  for (auto [pair, copy] : region.copies) {
    StridedView packed{offset, getRowMajorStrides(copy->shape)};
    program.pairs.push_back({pack ? pair->sourceBuffer : 0,
                             pack ? 0 : pair->targetBuffer,
                             {{copy->shape, pack ? copy->source : packed,
                               pack ? packed : copy->target,
                               region.scaleHere ? copy->factor : 1.0}}});
    offset += getCopyElements(*copy);
    if (pack) {
      buffers.sources[pair->sourceBuffer] =
          run.buffers.sources.at(pair->sourceBuffer);
      program.sourceElements[pair->sourceBuffer] =
          run.program->sourceElements.at(pair->sourceBuffer);
    } else {
      buffers.targets[pair->targetBuffer] =
          run.buffers.targets.at(pair->targetBuffer);
      program.targetElements[pair->targetBuffer] =
          run.program->targetElements.at(pair->targetBuffer);
    }
  }
  char *regionData = buffer + region.byteOffset;
  if (pack)
    buffers.targets[0] = regionData;
  else
    buffers.sources[0] = regionData;
  (pack ? program.targetElements : program.sourceElements)[0] = region.elements;
  executeOnCpu(program, buffers, run.type, threads);
}

size_t MpiExchange::post(int peer, char *data, int64_t bytes, bool send,
                         std::vector<MPI_Request> &requests) {
  size_t posted = 0;
  for (int64_t begin = 0; begin < bytes; begin += kMaxMessageBytes, ++posted) {
    int count = static_cast<int>(std::min(kMaxMessageBytes, bytes - begin));
    MPI_Request request;
    if (send)
      MPI_Isend(data + begin, count, MPI_BYTE, peer, 0, group.comm, &request);
    else
      MPI_Irecv(data + begin, count, MPI_BYTE, peer, 0, group.comm, &request);
    requests.push_back(request);
  }
  return posted;
}

void MpiExchange::runLocalCopies() {
  for (const ProgramRun &run : batch) {
    CopyProgram local;
    local.sourceElements = run.program->sourceElements;
    local.targetElements = run.program->targetElements;
    for (const BufferPairCopies &pair : run.program->pairs)
      if (group.holdsSource(pair.sourceBuffer) &&
          group.holdsTarget(pair.targetBuffer))
        local.pairs.push_back(pair);
    for (const StridedFill &fill : run.program->fills)
      if (group.holdsTarget(fill.targetBuffer))
        local.fills.push_back(fill);
    if (!local.pairs.empty() || !local.fills.empty())
      executeOnCpu(local, run.buffers, run.type, threads);
  }
}

void MpiExchange::postReceives() {
  for (auto &[peer, message] : receives) {
    message.buffer =
        group.getMessageBuffer(peer, /*send=*/false, message.bufferBytes);
    auto expect = [&](Arrival::Kind kind, const MessageRegion *staged,
                      char *data, int64_t bytes) {
      size_t posted = post(peer, data, bytes, /*send=*/false, receiveRequests);
      arrivalOf.resize(receiveRequests.size(), arrivals.size());
      arrivals.push_back({kind, &message, staged, posted});
    };
    expect(Arrival::PackedPart, nullptr, message.buffer, message.packedBytes);
    for (const SeparateCopy &separate : message.separate) {
      if (separate.direct)
        expect(Arrival::Direct, nullptr, separate.direct, separate.bytes);
      else
        expect(Arrival::Staged, &separate.staged,
               message.buffer + separate.staged.byteOffset, separate.bytes);
    }
  }
}

void MpiExchange::postSends() {
  // Peers in turn from the next process on, so that not every process
  // sends to process 0 first.
  int count = group.processCount, self = group.process;
  for (int step = 1; step < count; ++step) {
    auto it = sends.find((self + step) % count);
    if (it == sends.end())
      continue;
    PeerMessage &message = it->second;
    message.buffer = group.getMessageBuffer(message.peer, /*send=*/true,
                                            message.bufferBytes);
    for (const MessageRegion &region : message.packed)
      transfer(region, message.buffer, /*pack=*/true);
    post(message.peer, message.buffer, message.packedBytes, /*send=*/true,
         sendRequests);
    for (const SeparateCopy &separate : message.separate) {
      char *data = separate.direct;
      if (!data) {
        transfer(separate.staged, message.buffer, /*pack=*/true);
        data = message.buffer + separate.staged.byteOffset;
      }
      post(message.peer, data, separate.bytes, /*send=*/true, sendRequests);
    }
    group.bytesSent += message.packedBytes;
    for (const SeparateCopy &separate : message.separate)
      group.bytesSent += separate.bytes;
  }
}

void MpiExchange::unpack(const Arrival &arrival) {
  if (arrival.kind == Arrival::PackedPart)
    for (const MessageRegion &region : arrival.message->packed)
      transfer(region, arrival.message->buffer, /*pack=*/false);
  else if (arrival.kind == Arrival::Staged)
    transfer(*arrival.staged, arrival.message->buffer, /*pack=*/false);
}

llvm::Error MpiExchange::receiveAndUnpack() {
  for (const Arrival &arrival : arrivals)
    if (arrival.missing == 0)
      unpack(arrival); // Nothing to wait for.
  return group.waitSome(receiveRequests,
                        "receiving shards from other processes",
                        [&](int request) {
                          Arrival &arrival = arrivals[arrivalOf[request]];
                          if (--arrival.missing == 0)
                            unpack(arrival);
                        });
}

llvm::Error MpiExchange::run() {
  planMessages();
  postReceives();
  postSends();
  group.injectFault();
  runLocalCopies();
  if (llvm::Error error = receiveAndUnpack())
    return error;
  return group.waitAll(sendRequests, "sending shards to other processes");
}

llvm::Error MpiGroup::execute(llvm::ArrayRef<ProgramRun> batch,
                              unsigned threads) {
  if (broken)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the process group is broken");
  for (const ProgramRun &run : batch)
    for (const BufferPairCopies &pair : run.program->pairs)
      if (pair.sourceBuffer >=
              static_cast<int64_t>(ownership.sourceProcesses.size()) ||
          pair.targetBuffer >=
              static_cast<int64_t>(ownership.targetProcesses.size()))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "a program copies between ranks " +
                std::to_string(pair.sourceBuffer) + " and " +
                std::to_string(pair.targetBuffer) +
                ", beyond the ranks the process ownership names");
  llvm::Error error = MpiExchange(*this, batch, threads).run();
  ++batches;
  return error;
}

char *MpiGroup::getMessageBuffer(int peer, bool send, int64_t bytes) {
  // Kept between batches: fresh pages would fault in on every exchange.
  MessageBuffer &buffer = (send ? sendBuffers : receiveBuffers)[peer];
  if (buffer.capacity < bytes) {
    buffer.data.reset(new char[bytes]);
    buffer.capacity = bytes;
  }
  return buffer.data.get();
}

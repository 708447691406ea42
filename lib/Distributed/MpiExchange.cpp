//===- MpiExchange.cpp - One batch of copies across processes -------------===//
//
// Per peer, one message per batch: the sender packs the views of every
// buffer pair it sends there (parameter after parameter, each region
// 64-byte aligned) with the CPU executor, scale applied; the receiver
// unpacks them the same way. Receives are posted first, local copies run
// while messages travel, and each message is unpacked as soon as it has
// arrived.
//
//===----------------------------------------------------------------------===//

#include "ucp/Distributed/MpiTransfer.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <chrono>
#include <thread>

using namespace ucp;

namespace ucp {

/// The buffer pairs of one parameter that cross to (or from) one peer, and
/// where they sit in the message.
struct MessageRegion {
  size_t item = 0;
  std::vector<const BufferPairCopies *> pairs;
  int64_t elements = 0;
  int64_t byteOffset = 0;
};

/// The message of one batch between this process and one peer.
struct PeerMessage {
  int peer = 0;
  std::vector<MessageRegion> regions;
  int64_t bytes = 0;
  std::unique_ptr<char[]> data;
  std::vector<MPI_Request> requests;
};

class MpiExchange {
public:
  MpiExchange(MpiGroup &group, llvm::ArrayRef<ProgramRun> batch,
              unsigned threads)
      : group(group), batch(batch), threads(threads) {}

  llvm::Error run();

private:
  void planMessages();
  void post(PeerMessage &message, bool send);
  void runLocalCopies();
  llvm::Error receiveAndUnpack();
  /// Runs the copies of `region` between its parameter's buffers and the
  /// message `data`: packing when `pack`, else unpacking.
  void transfer(const MessageRegion &region, char *data, bool pack);

  MpiGroup &group;
  llvm::ArrayRef<ProgramRun> batch;
  unsigned threads;
  std::map<int, PeerMessage> sends, receives;
};

} // namespace ucp

static int64_t getCopyElements(const StridedCopy &copy) {
  return getNumElements(copy.shape).value_or(0);
}

void MpiExchange::planMessages() {
  const ProcessOwnership &owners = group.ownership;
  int self = group.process;
  for (auto [item, run] : llvm::enumerate(batch)) {
    // The regions of this parameter, by peer, on both sides.
    std::map<int, MessageRegion> out, in;
    for (const BufferPairCopies &pair : run.program->pairs) {
      int from = static_cast<int>(owners.sourceProcesses[pair.sourceBuffer]);
      int to = static_cast<int>(owners.targetProcesses[pair.targetBuffer]);
      if ((from == self) == (to == self))
        continue; // Local, or between two other processes.
      MessageRegion &region = from == self ? out[to] : in[from];
      region.item = item;
      region.pairs.push_back(&pair);
      for (const StridedCopy &copy : pair.copies)
        region.elements += getCopyElements(copy);
    }
    int64_t elementSize = getElementSize(run.type);
    for (auto *side : {&out, &in})
      for (auto &[peer, region] : *side) {
        PeerMessage &message = (side == &out ? sends : receives)[peer];
        message.peer = peer;
        region.byteOffset = llvm::alignTo(message.bytes, 64);
        message.bytes = region.byteOffset + region.elements * elementSize;
        message.regions.push_back(std::move(region));
      }
  }
}

void MpiExchange::transfer(const MessageRegion &region, char *data, bool pack) {
  const ProgramRun &run = batch[region.item];
  // The message side is buffer 0, its views contiguous in order.
  CopyProgram program;
  ProgramBuffers buffers;
  int64_t offset = 0;
  for (const BufferPairCopies *pair : region.pairs) {
    BufferPairCopies moved{
        pack ? pair->sourceBuffer : 0, pack ? 0 : pair->targetBuffer, {}};
    for (const StridedCopy &copy : pair->copies) {
      StridedView packed{offset, getRowMajorStrides(copy.shape)};
      moved.copies.push_back({copy.shape, pack ? copy.source : packed,
                              pack ? packed : copy.target,
                              pack ? copy.factor : 1.0});
      offset += getCopyElements(copy);
    }
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
    program.pairs.push_back(std::move(moved));
  }
  char *regionData = data + region.byteOffset;
  if (pack) {
    buffers.targets[0] = regionData;
    program.targetElements[0] = region.elements;
  } else {
    buffers.sources[0] = regionData;
    program.sourceElements[0] = region.elements;
  }
  executeOnCpu(program, buffers, run.type, threads);
}

void MpiExchange::post(PeerMessage &message, bool send) {
  // MPI counts are ints: a message travels in pieces of at most 1 GiB, in
  // order (messages of one pair and tag do not overtake each other).
  constexpr int64_t kPiece = int64_t(1) << 30;
  for (int64_t begin = 0; begin < message.bytes; begin += kPiece) {
    int count = static_cast<int>(std::min(kPiece, message.bytes - begin));
    MPI_Request request;
    if (send)
      MPI_Isend(message.data.get() + begin, count, MPI_BYTE, message.peer, 0,
                group.comm, &request);
    else
      MPI_Irecv(message.data.get() + begin, count, MPI_BYTE, message.peer, 0,
                group.comm, &request);
    message.requests.push_back(request);
  }
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

llvm::Error MpiExchange::receiveAndUnpack() {
  // Every piece of every message, with the message it belongs to.
  std::vector<MPI_Request> requests;
  std::vector<PeerMessage *> owner;
  std::map<PeerMessage *, size_t> missing;
  for (auto &[peer, message] : receives) {
    for (MPI_Request request : message.requests) {
      requests.push_back(request);
      owner.push_back(&message);
    }
    missing[&message] = message.requests.size();
    if (message.requests.empty())
      for (const MessageRegion &region : message.regions)
        transfer(region, message.data.get(), /*pack=*/false);
  }
  using Clock = std::chrono::steady_clock;
  auto deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(group.options.timeoutSeconds));
  std::vector<int> done(requests.size());
  size_t remaining = requests.size();
  for (unsigned polls = 0; remaining;) {
    int count = 0;
    MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &count,
                 done.data(), MPI_STATUSES_IGNORE);
    if (count == MPI_UNDEFINED)
      break;
    remaining -= count;
    for (int i = 0; i < count; ++i) {
      PeerMessage *message = owner[done[i]];
      if (--missing[message] == 0)
        for (const MessageRegion &region : message->regions)
          transfer(region, message->data.get(), /*pack=*/false);
    }
    if (count) {
      polls = 0;
      continue;
    }
    if (Clock::now() > deadline) {
      group.broken = true;
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "no message from a peer within " +
              llvm::formatv("{0}", group.options.timeoutSeconds).str() +
              " s (a process died or hangs); giving up");
    }
    if (++polls > 256)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return llvm::Error::success();
}

llvm::Error MpiExchange::run() {
  planMessages();
  for (auto &[peer, message] : receives) {
    message.data.reset(new char[message.bytes]);
    post(message, /*send=*/false);
  }
  // Peers in turn from the next process on, so that not every process
  // sends to process 0 first.
  int count = group.processCount, self = group.process;
  for (int step = 1; step < count; ++step) {
    auto it = sends.find((self + step) % count);
    if (it == sends.end())
      continue;
    PeerMessage &message = it->second;
    message.data.reset(new char[message.bytes]);
    for (const MessageRegion &region : message.regions)
      transfer(region, message.data.get(), /*pack=*/true);
    post(message, /*send=*/true);
    group.bytesSent += message.bytes;
  }
  group.injectFault();
  runLocalCopies();
  if (llvm::Error error = receiveAndUnpack())
    return error;
  std::vector<MPI_Request> requests;
  for (auto &[peer, message] : sends)
    llvm::append_range(requests, message.requests);
  return group.waitAll(requests, "sending shards to other processes");
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

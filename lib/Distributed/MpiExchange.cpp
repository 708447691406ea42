//===- MpiExchange.cpp - One batch of copies across processes -------------===//
//
// The MPI transport of an ExchangePlan (ExchangePlan.cpp routes the
// copies): per peer, the packed part and then each separate copy as
// messages of one stream (messages of one pair and tag do not overtake
// each other). The CPU executor packs and unpacks. Receives are posted
// first, local copies run while messages travel, and each message is
// unpacked as it arrives. For the node copies to a peer, the sender sends
// the addresses of its source buffers (a tag of their own); the receiver
// reads them as soon as those arrive and answers when done, and the sender
// waits for that answer before its buffers may change.
//
// MPI derived datatypes (an hindexed type over the runs of strided views,
// sent from MPI_BOTTOM) were measured too: Open MPI's shared-memory
// transport packs such types in small fragments, 2 to 5 times slower than
// packing here (docs/Distributed.md).
//
//===----------------------------------------------------------------------===//

#include "MpiExchange.h"
#include "ProcessMemory.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Support/Error.h"

using namespace ucp;

/// Messages carry at most this many bytes (MPI counts are ints).
static constexpr int64_t kMaxMessageBytes = int64_t(1) << 30;
/// The tags of the data stream, of the node copies' addresses, and of the
/// word that they have been made.
enum : int { kDataTag = 0, kAddressTag = 1, kCopiedTag = 2 };

static std::vector<ExchangeItem> getItems(llvm::ArrayRef<ProgramRun> batch) {
  std::vector<ExchangeItem> items;
  for (const ProgramRun &run : batch)
    items.push_back({run.program, run.type, run.scalePower});
  return items;
}

MpiExchange::MpiExchange(MpiGroup &group, llvm::ArrayRef<ProgramRun> batch)
    : group(group), batch(batch), threads(group.options.threads),
      items(getItems(batch)),
      plan(items, group.ownership, group.process, group.nodePeers) {}

char *MpiExchange::getAddress(const BufferSpan &span, bool sending) const {
  const ProgramBuffers &buffers = batch[span.item].buffers;
  char *base = sending ? static_cast<char *>(const_cast<void *>(
                             buffers.sources.at(span.buffer)))
                       : static_cast<char *>(buffers.targets.at(span.buffer));
  return base + span.byteOffset;
}

void MpiExchange::transfer(const MessageRegion &region, char *buffer,
                           bool pack) {
  CopyProgram program = plan.getRegionProgram(region, pack);
  ProgramBuffers buffers = getRegionBuffers(program, batch[region.item].buffers,
                                            buffer + region.byteOffset, pack);
  executeOnCpu({&program, buffers, batch[region.item].type}, threads);
}

size_t MpiExchange::post(int peer, char *data, int64_t bytes, bool send,
                         std::vector<MPI_Request> &requests) {
  size_t posted = 0;
  for (int64_t begin = 0; begin < bytes; begin += kMaxMessageBytes, ++posted) {
    int count = static_cast<int>(std::min(kMaxMessageBytes, bytes - begin));
    MPI_Request request;
    if (send)
      MPI_Isend(data + begin, count, MPI_BYTE, peer, kDataTag, group.comm,
                &request);
    else
      MPI_Irecv(data + begin, count, MPI_BYTE, peer, kDataTag, group.comm,
                &request);
    requests.push_back(request);
  }
  return posted;
}

void MpiExchange::runLocalCopies() {
  for (auto [item, run] : llvm::enumerate(batch)) {
    CopyProgram local = plan.getLocalProgram(item);
    if (!local.pairs.empty() || !local.fills.empty())
      executeOnCpu({&local, run.buffers, run.type}, threads);
  }
}

void MpiExchange::postReceives() {
  for (auto &[peer, message] : plan.receives) {
    char *buffer =
        group.getMessageBuffer(peer, /*send=*/false, message.bufferBytes);
    auto expect = [&](Arrival::Kind kind, const MessageRegion *staged,
                      char *data, int64_t bytes) {
      size_t posted = post(peer, data, bytes, /*send=*/false, receiveRequests);
      arrivalOf.resize(receiveRequests.size(), arrivals.size());
      arrivals.push_back({kind, &message, staged, buffer, posted});
    };
    expect(Arrival::PackedPart, nullptr, buffer, message.packedBytes);
    for (const SeparateCopy &separate : message.separate) {
      if (separate.direct)
        expect(Arrival::Direct, nullptr,
               getAddress(*separate.direct, /*sending=*/false), separate.bytes);
      else
        expect(Arrival::Staged, &separate.staged,
               buffer + separate.staged.byteOffset, separate.bytes);
    }
  }
}

void MpiExchange::postNodeCopies() {
  // Senders say where their source buffers lie; receivers read them.
  for (const auto &[peer, message] : plan.sends) {
    if (message.nodeCopies.empty())
      continue;
    std::vector<uint64_t> &addresses = ownAddresses[peer];
    for (const NodeCopy &copy : message.nodeCopies)
      addresses.push_back(reinterpret_cast<uintptr_t>(
          batch[copy.item].buffers.sources.at(copy.pair->sourceBuffer)));
    MPI_Request request;
    MPI_Isend(addresses.data(), static_cast<int>(addresses.size()),
              MPI_UINT64_T, peer, kAddressTag, group.comm, &request);
    sendRequests.push_back(request);
    MPI_Irecv(&copiedWords[peer], 1, MPI_CHAR, peer, kCopiedTag, group.comm,
              &request);
    copiedRequests.push_back(request);
  }
  for (const auto &[peer, message] : plan.receives) {
    if (message.nodeCopies.empty())
      continue;
    std::vector<uint64_t> &addresses = peerAddresses[peer];
    addresses.resize(message.nodeCopies.size());
    MPI_Request request;
    MPI_Irecv(addresses.data(), static_cast<int>(addresses.size()),
              MPI_UINT64_T, peer, kAddressTag, group.comm, &request);
    receiveRequests.push_back(request);
    arrivalOf.push_back(arrivals.size());
    arrivals.push_back({Arrival::NodeCopies, &message, nullptr, nullptr, 1});
  }
}

void MpiExchange::makeNodeCopies(const PeerMessage &message) {
  std::vector<iovec> local, remote;
  for (auto [copy, address] :
       llvm::zip(message.nodeCopies, peerAddresses.at(message.peer))) {
    const ProgramRun &run = batch[copy.item];
    int64_t size = getElementSize(run.type);
    appendRuns(local,
               reinterpret_cast<uintptr_t>(
                   run.buffers.targets.at(copy.pair->targetBuffer)),
               copy.copy->shape, copy.copy->target, size);
    appendRuns(remote, address, copy.copy->shape, copy.copy->source, size);
  }
  llvm::Error error = readProcessMemory(
      static_cast<pid_t>(group.pids[message.peer]), local, remote);
  if (error && nodeCopyFailure.empty())
    nodeCopyFailure = llvm::toString(std::move(error));
  llvm::consumeError(std::move(error));
  // Even after a failure: the sender waits for this word.
  static const char copied = 1;
  MPI_Request request;
  MPI_Isend(&copied, 1, MPI_CHAR, message.peer, kCopiedTag, group.comm,
            &request);
  sendRequests.push_back(request);
}

void MpiExchange::postSends() {
  // Peers in turn from the next process on, so that not every process
  // sends to process 0 first.
  int count = group.processCount, self = group.process;
  for (int step = 1; step < count; ++step) {
    auto it = plan.sends.find((self + step) % count);
    if (it == plan.sends.end())
      continue;
    const PeerMessage &message = it->second;
    char *buffer = group.getMessageBuffer(message.peer, /*send=*/true,
                                          message.bufferBytes);
    for (const MessageRegion &region : message.packed)
      transfer(region, buffer, /*pack=*/true);
    post(message.peer, buffer, message.packedBytes, /*send=*/true,
         sendRequests);
    for (const SeparateCopy &separate : message.separate) {
      char *data;
      if (separate.direct) {
        data = getAddress(*separate.direct, /*sending=*/true);
      } else {
        transfer(separate.staged, buffer, /*pack=*/true);
        data = buffer + separate.staged.byteOffset;
      }
      post(message.peer, data, separate.bytes, /*send=*/true, sendRequests);
    }
  }
  group.bytesSent += plan.getBytesSent();
}

void MpiExchange::unpack(const Arrival &arrival) {
  if (arrival.kind == Arrival::PackedPart)
    for (const MessageRegion &region : arrival.message->packed)
      transfer(region, arrival.buffer, /*pack=*/false);
  else if (arrival.kind == Arrival::Staged)
    transfer(*arrival.staged, arrival.buffer, /*pack=*/false);
  else if (arrival.kind == Arrival::NodeCopies)
    makeNodeCopies(*arrival.message);
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
  postReceives();
  postNodeCopies();
  postSends();
  group.injectFault(group.batches);
  runLocalCopies();
  if (llvm::Error error = receiveAndUnpack())
    return error;
  if (llvm::Error error =
          group.waitAll(sendRequests, "sending shards to other processes"))
    return error;
  if (llvm::Error error = group.waitAll(
          copiedRequests, "waiting for other processes to copy shards"))
    return error;
  if (!nodeCopyFailure.empty())
    return makeError(nodeCopyFailure);
  return llvm::Error::success();
}

llvm::Error MpiGroup::execute(llvm::ArrayRef<ProgramRun> batch) {
  if (broken)
    return makeError("the process group is broken");
  for (const ProgramRun &run : batch)
    if (llvm::Error error = checkRanksOwned(*run.program, ownership))
      return error;
  llvm::Error error = MpiExchange(*this, batch).run();
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

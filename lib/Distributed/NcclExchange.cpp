//===- NcclExchange.cpp - One batch of copies across GPUs -----------------===//
//
// The NCCL transport of an ExchangePlan (ExchangePlan.cpp routes the
// copies), on GPU buffers. Each batch compiles the kernels of its packing,
// local and unpacking programs (one module per element type), uploads
// their buffer tables, then queues on the GPU's default stream, in order:
// the packing kernels, the local copies, one NCCL group with every receive
// and send of the batch (per peer the packed part, then each separate copy,
// in the same order on both sides, as NCCL matches them), and the unpacking
// kernels. The host then polls the stream and the communicator until the
// timeout.
//
//===----------------------------------------------------------------------===//

#include "ucp/Distributed/NcclTransfer.h"

#include "ExchangePlan.h"
#include "NcclLibrary.h"

#include "ucp/Engine/CudaKernels.h"
#include "ucp/Support/Error.h"

namespace ucp {

/// One call of NcclGroup::execute.
class NcclExchange {
public:
  NcclExchange(NcclGroup &group, llvm::ArrayRef<DeviceProgramRun> batch);
  llvm::Error run();

private:
  /// A kernel launch: program `index` of the module of `type`.
  struct Launch {
    DType type;
    size_t index;
    DeviceProgramBuffers buffers;
    DeviceLaunch prepared;
  };

  /// Adds `program` to its element type's module, to run on `buffers`.
  void addLaunch(std::vector<Launch> &launches, DType type, CopyProgram program,
                 DeviceProgramBuffers buffers);
  /// Adds the launch that packs (unpacks) `region` at `message`.
  void addRegion(std::vector<Launch> &launches, const MessageRegion &region,
                 DeviceAddress message, bool pack);
  llvm::Error planLaunches();
  llvm::Error compileAndPrepare();
  llvm::Error enqueue(const std::vector<Launch> &launches) const;
  llvm::Error postMessages();
  DeviceAddress getAddress(const BufferSpan &span, bool sending) const;

  NcclGroup &group;
  llvm::ArrayRef<DeviceProgramRun> batch;
  std::vector<ExchangeItem> items;
  ExchangePlan plan;
  std::map<DType, std::vector<std::pair<std::string, CopyProgram>>> programs;
  std::map<DType, std::unique_ptr<CudaKernels>> executors;
  std::vector<Launch> packs, locals, unpacks;
  std::map<int, DeviceAddress> sendBuffers, receiveBuffers;
  /// The launches' buffer tables.
  CudaMemory tables;
};

} // namespace ucp

using namespace ucp;

static std::vector<ExchangeItem>
getItems(llvm::ArrayRef<DeviceProgramRun> batch) {
  std::vector<ExchangeItem> items;
  for (const DeviceProgramRun &run : batch)
    items.push_back({run.program, run.type, run.scalePower});
  return items;
}

NcclExchange::NcclExchange(NcclGroup &group,
                           llvm::ArrayRef<DeviceProgramRun> batch)
    : group(group), batch(batch), items(getItems(batch)),
      plan(items, group.ownership, group.control->getProcess()),
      tables(group.device) {}

DeviceAddress NcclExchange::getAddress(const BufferSpan &span,
                                       bool sending) const {
  const DeviceProgramBuffers &buffers = batch[span.item].buffers;
  return (sending ? buffers.sources : buffers.targets).at(span.buffer) +
         span.byteOffset;
}

void NcclExchange::addLaunch(std::vector<Launch> &launches, DType type,
                             CopyProgram program,
                             DeviceProgramBuffers buffers) {
  if (program.pairs.empty() && program.fills.empty())
    return;
  auto &module = programs[type];
  launches.push_back({type, module.size(), std::move(buffers), {}});
  module.push_back(
      {"exchange_" + std::to_string(module.size()), std::move(program)});
}

void NcclExchange::addRegion(std::vector<Launch> &launches,
                             const MessageRegion &region, DeviceAddress message,
                             bool pack) {
  CopyProgram program = plan.getRegionProgram(region, pack);
  DeviceProgramBuffers buffers = getRegionBuffers(
      program, batch[region.item].buffers, message + region.byteOffset, pack);
  addLaunch(launches, batch[region.item].type, std::move(program),
            std::move(buffers));
}

llvm::Error NcclExchange::planLaunches() {
  for (auto [sides, buffers, launches, pack] :
       {std::make_tuple(&plan.sends, &sendBuffers, &packs, true),
        std::make_tuple(&plan.receives, &receiveBuffers, &unpacks, false)})
    for (const auto &[peer, message] : *sides) {
      llvm::Expected<DeviceAddress> buffer =
          group.getMessageBuffer(peer, pack, message.bufferBytes);
      if (!buffer)
        return buffer.takeError();
      (*buffers)[peer] = *buffer;
      for (const MessageRegion &region : message.packed)
        addRegion(*launches, region, *buffer, pack);
      for (const SeparateCopy &separate : message.separate)
        if (!separate.direct)
          addRegion(*launches, separate.staged, *buffer, pack);
    }
  for (auto [item, run] : llvm::enumerate(batch))
    addLaunch(locals, run.type, plan.getLocalProgram(item), run.buffers);
  return llvm::Error::success();
}

llvm::Error NcclExchange::compileAndPrepare() {
  for (auto &[type, module] : programs) {
    llvm::Expected<std::unique_ptr<CudaKernels>> executor = CudaKernels::create(
        module, type, CudaUnitIndex::Narrowest, group.device);
    if (!executor)
      return executor.takeError();
    executors[type] = std::move(*executor);
  }
  // Uploading a table waits for the GPU: all of them before any launch.
  for (auto *launches : {&packs, &locals, &unpacks})
    for (Launch &launch : *launches) {
      llvm::Expected<DeviceLaunch> prepared =
          executors.at(launch.type)
              ->prepare(launch.index, launch.buffers, tables);
      if (!prepared)
        return prepared.takeError();
      launch.prepared = *prepared;
    }
  return llvm::Error::success();
}

llvm::Error NcclExchange::enqueue(const std::vector<Launch> &launches) const {
  for (const Launch &launch : launches)
    if (llvm::Error error = executors.at(launch.type)->enqueue(launch.prepared))
      return error;
  return llvm::Error::success();
}

llvm::Error NcclExchange::postMessages() {
  const NcclLibrary &nccl = *group.nccl;
  ncclComm_t comm = group.comm;
  // The default stream, which the kernels are queued on too.
  cudaStream_t stream = nullptr;
  ncclResult_t result = nccl.groupStart();
  auto post = [&](bool send, int peer, DeviceAddress address, int64_t bytes) {
    if (result != ncclSuccess || bytes == 0)
      return; // Both sides skip empty parts alike.
    void *data = reinterpret_cast<void *>(static_cast<uintptr_t>(address));
    result = send ? nccl.send(data, bytes, ncclUint8, peer, comm, stream)
                  : nccl.recv(data, bytes, ncclUint8, peer, comm, stream);
  };
  for (auto [sides, buffers, send] :
       {std::make_tuple(&plan.receives, &receiveBuffers, false),
        std::make_tuple(&plan.sends, &sendBuffers, true)})
    for (const auto &[peer, message] : *sides) {
      DeviceAddress buffer = buffers->at(peer);
      post(send, peer, buffer, message.packedBytes);
      for (const SeparateCopy &separate : message.separate)
        post(send, peer,
             separate.direct ? getAddress(*separate.direct, send)
                             : buffer + separate.staged.byteOffset,
             separate.bytes);
    }
  // The group is closed even after a failed call, or NCCL stays in it.
  ncclResult_t ended = nccl.groupEnd();
  if (result == ncclSuccess)
    result = ended;
  if (result != ncclSuccess && result != ncclInProgress)
    return nccl.fail(result, "to queue the batch's sends and receives");
  return llvm::Error::success();
}

llvm::Error NcclExchange::run() {
  if (llvm::Error error = planLaunches())
    return error;
  if (llvm::Error error = compileAndPrepare())
    return error;
  if (llvm::Error error = enqueue(packs))
    return error;
  if (llvm::Error error = enqueue(locals))
    return error;
  if (llvm::Error error = postMessages())
    return error;
  if (llvm::Error error = enqueue(unpacks))
    return error;
  group.bytesSent += plan.getBytesSent();
  return group.waitForDevice("moving shards between GPUs");
}

llvm::Error NcclGroup::execute(llvm::ArrayRef<DeviceProgramRun> batch) {
  if (broken)
    return makeError("the process group is broken");
  for (const DeviceProgramRun &run : batch)
    if (llvm::Error error = checkRanksOwned(*run.program, ownership))
      return error;
  return NcclExchange(*this, batch).run();
}

//===- Retarget.cpp - A DeepSpeed checkpoint at another topology ----------===//
//
// Plan (target partitioning, target maps, copy programs; everything checked
// before a file is made), then write the target files one at a time, the
// parameters of each partition in parallel, each parameter's copies run
// from the memory-mapped source fragments in batches whose source pages are
// released once done.
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"
#include "ucp/Element/FloatBits.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Engine/ProgramDriver.h"
#include "ucp/Layout/NestedLayout.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Plan/Planner.h"
#include "ucp/Support/CheckpointFolder.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"

#include <chrono>

using namespace ucp;
using llvm::Error;
using llvm::Expected;

Error Retargeter::checkTarget() const {
  if (stage < 1 || stage > 3)
    return makeError("--zero-stage " + std::to_string(stage) +
                     ": expected 1, 2 or 3");
  if (options.dp < 1)
    return makeError("--dp " + std::to_string(options.dp) + ": expected >= 1");
  if (Error error = checkPipeline())
    return error;
  if (tp < 1 || tp > kMaxWorldSize)
    return makeError("--tp " + std::to_string(tp) + ": expected 1 to " +
                     std::to_string(kMaxWorldSize));
  if (options.numKvHeads && !options.targetMaps.empty())
    return makeError("--num-kv-heads: the maps of --target-map decide "
                     "the split");
  if (options.numKvHeads && !changesTp())
    return makeError("--num-kv-heads: used only at a new TP degree "
                     "(--tp), and the TP degree stays " +
                     std::to_string(tp));
  // Bounded before any map is built: the target grid is dp x pp x tp
  // ranks (dp alone first, so that the product cannot overflow; pp and tp
  // are bounded already).
  int64_t world =
      std::min(options.dp, kMaxWorldSize + 1) * getModelParallelDegree();
  if (std::string error =
          checkWorldSize(options.dp > kMaxWorldSize ? options.dp : world,
                         checkpoint.isPipeline()
                                 ? "the target's DP x PP x TP world"
                                 : "the target's DP x TP world");
      !error.empty())
    return makeError("--dp " + std::to_string(options.dp) + ": " + error);
  // A fresh checkpoint holds no moments, and its target none either.
  for (const DeepSpeedParam &param : checkpoint.getParams())
    if (std::string missing = checkpoint.getMissingStates(param.group);
        !missing.empty() && !checkpoint.isFresh())
      return makeError(
          checkpoint.getFolder() + ": parameter group " +
          std::to_string(param.group) + " has no " + missing +
          " (saved before the optimizer's first step?), which the target's "
          "optimizer files hold");
  if (checkpoint.getAutoEpSize() || options.autoEpSize)
    if (Error error = checkExpertParallel())
      return error;
  PickleCursor root(checkpoint.getModelFiles().front()->getDocument());
  std::optional<PickleCursor> buffers = root.find("buffer_names");
  if (changesTpMaps() && buffers && buffers->is(PickleValue::List) &&
      !buffers->get().items.empty())
    return makeError(checkpoint.getFolder() +
                     ": module buffers (buffer_names) at a new TP "
                     "degree are not supported");
  return Error::success();
}

Error Retargeter::plan() {
  if (Error error = checkTarget())
    return error;
  if (Error error = planTensorParallel())
    return error;
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  for (size_t p = 0; p < params.size(); ++p) {
    if (params[p].group >= groups.size())
      groups.resize(params[p].group + 1);
    groups[params[p].group].push_back(p);
  }
  if (Error error = planStages())
    return error;
  if (Error error = planFrozenParams())
    return error;
  if (Error error = planLayerFiles())
    return error;
  for (size_t g = 0; g < groups.size(); ++g) {
    outerDegrees.push_back(isExpertGroup(g) ? epSize
                                            : getModelParallelDegree());
    std::vector<ZeroGroupLayout> &perRank = layouts.emplace_back();
    for (int64_t o = 0; o < outerDegrees[g]; ++o) {
      std::vector<int64_t> elements;
      for (size_t p : getGroupParams(g, o))
        elements.push_back(*getNumElements(tpShapes[p][o]));
      perRank.push_back(layOutZeroGroup(elements, getGroupDpDegree(g), stage));
    }
  }
  // Each parameter's target map: its TP (or EP) map, each shard cut by the
  // target's partitioning; and its TP map alone, for the weights. Planned
  // one parameter at a time, so that memory holds one target map (one
  // shard per target rank) rather than every parameter's.
  auto planInto = [&](const ParamMap &source, const ParamMap &target,
                  TransferPrograms &into) -> Error {
    Expected<TransferPrograms> planned =
        planTransfers(source, target, {ReplicaPolicy::Lowest});
    if (!planned)
      return planned.takeError();
    into.merge(*planned);
    return Error::success();
  };
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t p : groups[g]) {
      const DeepSpeedParam &param = params[p];
      std::vector<ParamMap> inner;
      for (int64_t o = 0; o < outerDegrees[g]; ++o) {
        // A rank of a stage without the parameter has no shard to cut.
        int64_t i = stagePositions[isExpertGroup(g) ? 0 : o / tp][p];
        if (i < 0) {
          inner.push_back(
              {param.name, {}, getGroupDpDegree(g), {}, std::nullopt});
          continue;
        }
        Extents sizes;
        for (int64_t d = 0; d < getGroupDpDegree(g); ++d)
          sizes.push_back(layouts[g][o].getSlice(i, d).count);
        Expected<ParamMap> cut =
            buildFlatRangeLayout(param.name, tpShapes[p][o], sizes);
        if (!cut)
          return cut.takeError();
        inner.push_back(std::move(*cut));
      }
      Expected<ParamMap> map = nestShardMaps(tpMaps[p], inner);
      if (!map)
        return map.takeError();
      if (Error error = planInto(param.map, *map, programs))
        return error;
      // One program serves every state: each must be able to move
      // through it.
      for (TensorState state : kOptimizerStates)
        if (Error error = checkScalePower(programs.at(param.name), param.name,
                                          getScalePower(state)))
          return error;
      if (rebuildsWeights())
        if (Error error = planInto(param.map, tpMaps[p], weightPrograms))
          return error;
    }
  return Error::success();
}

/// The zeros a partition's padding is written from, a piece at a time:
/// made once, not once per file.
static llvm::StringRef getZeroPiece() {
  static const std::string zeros(size_t(1) << 20, '\0');
  return zeros;
}

void Retargeter::buildWeights(size_t g, size_t i, int64_t t, DType type,
                              std::vector<char> &out) const {
  const DeepSpeedParam &param = checkpoint.getParams()[getGroupParams(g, t)[i]];
  int64_t elements = layouts[g][t].elements[i];
  // The fp32 master of the TP shard (its source pages released as read),
  // then in the model's dtype, rounded to nearest even as torch's copy_
  // does.
  std::vector<float> master(elements);
  ProgramRun run = checkpoint.getFragmentRun(param, TensorState::Master,
                                             weightPrograms.at(param.name));
  CpuExecutor cpu(/*threads=*/1);
  // The CPU executor does not fail.
  llvm::cantFail(runIntoTargetAs(
      run, t, elements, DType::F32, reinterpret_cast<char *>(master.data()),
      cpu, getFragmentReleaser(param, TensorState::Master)));
  out.resize(elements * getElementSize(type));
  narrowFloat32(master.data(), elements, type, out.data());
}

std::vector<size_t> Retargeter::getPartitionParams(size_t g, int64_t d,
                                                   int64_t t) const {
  GroupRank rank = getGroupRank(g, d, t);
  const ZeroGroupLayout &layout = layouts[g][rank.outer];
  std::vector<size_t> found;
  for (auto [i, p] : llvm::enumerate(getGroupParams(g, rank.outer)))
    if (layout.getSlice(i, rank.inner).count > 0)
      found.push_back(p);
  return found;
}

Error Retargeter::checkPartitionFragments(size_t g, int64_t d, int64_t t,
                                          size_t state) {
  TensorState which = kOptimizerStates[state];
  for (size_t p : getPartitionParams(g, d, t)) {
    {
      std::lock_guard<std::mutex> lock(valuesCheckedMutex);
      if (!valuesChecked.insert({p, state}).second)
        continue;
    }
    if (Error error = checkpoint.checkFragments(checkpoint.getParams()[p],
                                                which, options.checkValues))
      return error;
  }
  return Error::success();
}

Retargeter::PartitionPieces
Retargeter::getPartitionPieces(size_t g, int64_t d, int64_t t, size_t state,
                               int64_t elements, llvm::StringRef zeros) const {
  GroupRank rank = getGroupRank(g, d, t);
  const ZeroGroupLayout &layout = layouts[g][rank.outer];
  int64_t target = rank.world;
  TensorState which = kOptimizerStates[state];
  // Each parameter's fragment: runs of its mapped source fragments where
  // its copies only concatenate them (flat from flat, whole from whole),
  // else executed into a buffer of its own.
  std::vector<ProgramRun> runs;
  std::vector<std::optional<std::vector<SourcePiece>>> direct;
  std::vector<size_t> executed;
  llvm::ArrayRef<size_t> params = getGroupParams(g, rank.outer);
  for (auto [i, p] : llvm::enumerate(params)) {
    const DeepSpeedParam &param = checkpoint.getParams()[p];
    runs.push_back(
        checkpoint.getFragmentRun(param, which, programs.at(param.name)));
    // Fragments of another type than the partitions' are converted.
    direct.push_back(runs.back().type == DType::F32
                         ? getSourcePieces(runs.back(), target)
                         : std::nullopt);
    if (layout.getSlice(i, rank.inner).count > 0 && !direct.back())
      executed.push_back(i);
  }
  PartitionPieces pieces;
  pieces.buffers.resize(params.size());
  llvm::parallelFor(0, executed.size(), [&](size_t e) {
    size_t i = executed[e];
    const DeepSpeedParam &param = checkpoint.getParams()[params[i]];
    std::vector<char> &buffer = pieces.buffers[i];
    int64_t count = layout.getSlice(i, rank.inner).count;
    buffer.assign(count * 4, 0);
    CpuExecutor cpu(/*threads=*/1);
    // The CPU executor does not fail.
    llvm::cantFail(runIntoTargetAs(runs[i], target, count, DType::F32,
                                   buffer.data(), cpu,
                                   getFragmentReleaser(param, which)));
  });
  int64_t at = 0; // Elements of the partition laid out so far.
  auto pad = [&](int64_t upTo) {
    for (int64_t n; at < upTo; at += n) {
      n = std::min<int64_t>(upTo - at, zeros.size() / 4);
      pieces.pieces.push_back(zeros.take_front(n * 4));
    }
  };
  for (auto [i, p] : llvm::enumerate(params)) {
    FragmentSlice slice = layout.getSlice(i, rank.inner);
    if (slice.count == 0)
      continue;
    pad(slice.offset); // ZeRO-3's slots end in padding.
    const DeepSpeedParam &param = checkpoint.getParams()[p];
    if (!direct[i])
      pieces.pieces.push_back(
          {pieces.buffers[i].data(), pieces.buffers[i].size()});
    else
      for (const SourcePiece &piece : *direct[i]) {
        pieces.pieces.push_back(piece.bytes);
        pieces.sources.push_back({&param, piece.rank, piece.bytes});
      }
    at += slice.count;
  }
  pad(elements); // ZeRO-1/2's end in padding.
  return pieces;
}

Error Retargeter::writeTargetFile(llvm::StringRef path, const TargetFile &file,
                                  const TorchFile &source, int64_t d, int64_t t,
                                  bool releaseSource) {
  Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(path, file.document);
  if (!writer)
    return writer.takeError();
  if (Error error =
          writeStorages(**writer, source, d, t, file.storages, releaseSource))
    return error;
  if (Error error = (*writer)->copyStoragesFrom(source))
    return error;
  if (Error error = (*writer)->commit(/*durable=*/false))
    return error;
  ++filesWritten;
  return Error::success();
}

Error Retargeter::writeStorages(TorchFileWriter &writer,
                                const TorchFile &source, int64_t d, int64_t t,
                                llvm::ArrayRef<NewStorage> storages,
                                bool releaseSource) {
  std::vector<char> buffer;
  for (const NewStorage &storage : storages) {
    int64_t size = getElementSize(storage.type);
    std::vector<llvm::StringRef> pieces;
    std::string zeros;
    PartitionPieces partition;
    switch (storage.fill) {
    case NewStorage::Partition:
      if (Error error =
              checkPartitionFragments(storage.group, d, t, storage.state))
        return error;
      partition = getPartitionPieces(storage.group, d, t, storage.state,
                                     storage.elements, getZeroPiece());
      pieces = partition.pieces;
      break;
    case NewStorage::MasterWeights: {
      // One weight at a time, then the padding: memory holds one.
      size_t params = getGroupParams(storage.group, t).size();
      zeros.assign((storage.elements - storage.kept) * size, '\0');
      if (Error error = writer.writeStorage(
              storage.key, params + 1, [&](size_t i) -> llvm::StringRef {
                if (i == params)
                  return zeros;
                buildWeights(storage.group, i, t, storage.type, buffer);
                return {buffer.data(), buffer.size()};
              }))
        return error;
      bytesWritten += storage.elements * size;
      continue;
    }
    case NewStorage::SourceWeights:
      // The real elements; the padding, whatever the source held, zeros.
      pieces.push_back(
          source.getStorageBytes(storage.key)->take_front(storage.kept * size));
      zeros.assign((storage.elements - storage.kept) * size, '\0');
      pieces.push_back(zeros);
      break;
    case NewStorage::Frozen:
      buildFrozenShard(storage, buffer);
      pieces.push_back({buffer.data(), buffer.size()});
      break;
    case NewStorage::Empty:
      break;
    }
    if (Error error = writer.writeStorage(
            storage.key, pieces, [&](llvm::StringRef chunk) {
              if (releaseSource && storage.fill == NewStorage::SourceWeights)
                source.releasePages(chunk.data(), chunk.size()); // Read once.
            }))
      return error;
    for (const PartitionPieces::Source &read : partition.sources)
      checkpoint.releaseFragmentPages(*read.param, read.rank,
                                      kOptimizerStates[storage.state],
                                      read.bytes.data(), read.bytes.size());
    bytesWritten += storage.elements * size;
  }
  return Error::success();
}

Error Retargeter::copySourceFile(llvm::StringRef file,
                                  llvm::StringRef folder) {
  llvm::SmallString<256> copy(folder);
  llvm::sys::path::append(copy, llvm::sys::path::filename(file));
  if (std::error_code ec = llvm::sys::fs::copy_file(file, copy))
    return makeError(copy + ": " + ec.message());
  uint64_t size = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(copy, size))
    return makeError(copy + ": " + ec.message());
  bytesWritten += size;
  ++filesWritten;
  return Error::success();
}

std::optional<PickleCursor> ucp::findPath(const PickleCursor &root,
                                          llvm::ArrayRef<const char *> keys) {
  std::optional<PickleCursor> at = root;
  for (const char *key : keys)
    if (!(at = at->find(key)))
      return std::nullopt;
  return at;
}

void ucp::replacePath(const PickleCursor &root,
                      llvm::ArrayRef<const char *> keys, PickleRef value,
                      llvm::DenseMap<PickleRef, PickleRef> &replaced) {
  if (std::optional<PickleCursor> old = findPath(root, keys))
    replaced[old->getRef()] = value;
}

/// The bytes of the files `files` on disk (what balances the processes'
/// work, so a file that cannot be measured counts nothing).
static int64_t getFileBytes(llvm::ArrayRef<std::string> files) {
  int64_t total = 0;
  for (const std::string &file : files) {
    uint64_t size = 0;
    if (!llvm::sys::fs::file_size(file, size))
      total += size;
  }
  return total;
}

GroupFingerprint Retargeter::divideOutputs() {
  std::vector<std::string> models, layers, experts;
  for (const std::unique_ptr<TorchFile> &file : checkpoint.getModelFiles())
    models.push_back(file->getPath().str());
  for (const std::unique_ptr<TorchFile> &file : checkpoint.getLayerFiles())
    layers.push_back(file->getPath().str());
  for (const std::vector<std::string> &layer : checkpoint.getExpertFiles())
    experts.insert(experts.end(), layer.begin(), layer.end());
  int64_t modelBytes = getFileBytes(models);
  int64_t layerBytes = getFileBytes(layers);
  int64_t expertBytes = getFileBytes(experts);
  int64_t otherBytes = getFileBytes(checkpoint.getFiles()) - modelBytes -
                       layerBytes - expertBytes;
  // The target's files as the source's, spread over the target's count.
  int64_t mp = getModelParallelDegree();
  int64_t modelFiles = isZero3Target() ? mp * options.dp : mp;
  for (int64_t m = 0; m < mp; ++m)
    for (int64_t d = 0; d < (isZero3Target() ? options.dp : 1); ++d)
      modelOutputs[{d, m}] = share.add(
          "model states " + std::to_string(d) + "," + std::to_string(m),
          modelBytes / modelFiles);
  for (int64_t d = 0; d < options.dp; ++d)
    for (int64_t m = 0; m < mp; ++m)
      tensorOutputs[{d, m}] = share.add(
          "optimizer states " + std::to_string(d) + "," + std::to_string(m),
          otherBytes / (mp * options.dp));
  layerOutput = share.add("layer files", layerBytes);
  expertOutput = share.add("expert files", expertBytes);
  share.divide(options.group);
  GroupFingerprint plan;
  plan.addValue("the job", checkpoint.isUniversal() ? "universal-to-ds"
                                                    : "ds-retarget");
  addInputFiles(plan, checkpoint.getFolder(), checkpoint.getFiles());
  for (const DeepSpeedParam &param : checkpoint.getParams())
    plan.addMap("the map of '" + param.name + "'", param.map);
  share.addTo(plan);
  return plan;
}

Error Retargeter::write(llvm::StringRef folder) {
  // One file at a time, each partition's parameters in parallel: memory
  // holds one target partition.
  llvm::parallel::strategy = llvm::hardware_concurrency(options.threads);
  // Model states per model-parallel rank, or per grid rank for ZeRO-3;
  // optimizer states per grid rank; a pipeline's layer files; ZeRO-1/2's
  // per-expert files. Only those of this process.
  size_t experts = 0;
  if (!isZero3Target())
    for (const AutoEpLayer &layer : checkpoint.getAutoEpLayers())
      experts += layer.numExperts;
  size_t layerFiles = getLayerFileCount();
  size_t total = 0;
  for (const auto *outputs : {&modelOutputs, &tensorOutputs})
    for (const auto &[rank, output] : *outputs)
      total += share.isMine(output);
  total += (layerFiles && share.isMine(layerOutput) ? layerFiles : 0) +
           (experts && share.isMine(expertOutput) ? experts : 0);
  auto report = [&] {
    if (options.group)
      options.group->markOutputWritten();
    return reportProgress(options.progress, filesWritten, total, bytesWritten);
  };
  for (int64_t m = 0; m < getModelParallelDegree(); ++m)
    for (int64_t d = 0; d < (isZero3Target() ? options.dp : 1); ++d) {
      if (!share.isMine(modelOutputs[{d, m}]))
        continue;
      if (Error error = writeModelStates(d, m, folder))
        return error;
      if (Error error = report())
        return error;
    }
  for (const auto &[rank, output] : tensorOutputs) {
    if (!share.isMine(output))
      continue;
    if (Error error = writeTensorStates(rank.first, rank.second, folder))
      return error;
    if (Error error = report())
      return error;
  }
  if (layerFiles && share.isMine(layerOutput)) {
    if (Error error = writeLayerFiles(folder))
      return error;
    if (Error error = report())
      return error;
  }
  if (experts && share.isMine(expertOutput)) {
    if (Error error = writeExpertFiles(folder))
      return error;
    if (Error error = report())
      return error;
  }
  return Error::success();
}

Expected<RetargetStats>
ucp::retargetCheckpoint(const DeepSpeedCheckpoint &checkpoint,
                        llvm::StringRef output,
                        const RetargetOptions &options) {
  auto start = std::chrono::steady_clock::now();
  Expected<llvm::StringRef> folder =
      getCheckpointFolder(output, "latest", checkpoint.getFolder());
  Retargeter retargeter(checkpoint, options);
  // Every process plans; should one fail alone, all stop.
  Error planned = folder ? retargeter.plan() : folder.takeError();
  if (options.group)
    planned = options.group->agree(std::move(planned));
  if (planned)
    return std::move(planned);
  GroupFingerprint plan = retargeter.divideOutputs();
  if (options.supplyInput)
    if (Error error = supplyReads(options.supplyInput, options.group,
                                  retargeter.getReads()))
      return std::move(error);
  // DeepSpeed's load_checkpoint finds the tag through latest.
  Expected<std::string> pointerNote = writeCheckpointFolderTogether(
      options.group, *folder, "latest", checkpoint.getFolder(), plan,
      [&](llvm::StringRef staged) { return retargeter.write(staged); },
      options.syncOutputs);
  if (!pointerNote)
    return pointerNote.takeError();
  std::vector<int64_t> totals = {int64_t(retargeter.getFilesWritten()),
                                 retargeter.getBytesWritten()};
  if (Error error = sumOverGroup(options.group, totals))
    return std::move(error);
  RetargetStats stats;
  stats.pointerNote = std::move(*pointerNote);
  stats.files = totals[0];
  stats.bytesWritten = totals[1];
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return stats;
}

//===- Retarget.cpp - A DeepSpeed checkpoint at another topology ----------===//
//
// Plan (target flattening, target maps, copy programs; everything checked
// before a file is made), then write each target file in parallel: model
// states per TP rank, optimizer states per grid rank, each a copy of the
// source's with the values the topology changes replaced (PickleBuilder::
// copy with those values mapped to new ones).
//
//===----------------------------------------------------------------------===//

#include "ucp/Universal/Retarget.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/IO/PickleCursor.h"
#include "ucp/IO/TorchFileWriter.h"
#include "ucp/IO/ZeroFlattening.h"
#include "ucp/Layout/NestedLayout.h"
#include "ucp/Runtime/CpuExecutor.h"
#include "ucp/Universal/CheckpointFolder.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"

#include <atomic>
#include <chrono>

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace path = llvm::sys::path;

static Error refuse(const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
}

/// DeepSpeed's ZeroStageEnum member of ZeRO stage `stage`.
static llvm::StringRef getStageMember(int stage) {
  return stage == 1 ? "optimizer_states" : "gradients";
}

namespace {

class Retargeter {
public:
  Retargeter(const DeepSpeedCheckpoint &checkpoint,
             const RetargetOptions &options)
      : checkpoint(checkpoint), options(options), tp(checkpoint.getTpDegree()),
        stage(options.zeroStage.value_or(checkpoint.getZeroStage())) {}

  Error plan();
  Error write(llvm::StringRef folder);
  int64_t getBytesWritten() const { return bytesWritten; }
  size_t getFilesWritten() const { return filesWritten; }

private:
  /// Parameter indices of each group, in the group's order.
  std::vector<std::vector<size_t>> groups;
  /// Per group and TP rank: the target's flattening.
  std::vector<std::vector<ZeroGroupLayout>> layouts;
  std::array<TransferPrograms, 3> programs;

  /// A storage of a target optimizer file: `elements` of `state` from
  /// the start of the rank's partition of `group`.
  struct NewStorage {
    std::string key;
    size_t group, state;
    int64_t elements;
  };
  /// A target optimizer file: its document and the storages to fill.
  struct OptimizerFile {
    PickleDocument document;
    std::vector<NewStorage> storages;
  };

  Error writeModelStates(int64_t t, llvm::StringRef folder);
  void releaseSource(int64_t rank, const StridedCopy &copy,
                     const ProgramBuffers &buffers) const;
  Expected<OptimizerFile> buildOptimizerStates(int64_t d, int64_t t) const;
  PickleRef buildSliceMappings(PickleBuilder &b, size_t g, int64_t d,
                               int64_t t) const;
  Error writeOptimizerStates(int64_t d, int64_t t, llvm::StringRef folder);
  void fillPartition(size_t g, int64_t d, int64_t t, size_t state,
                     std::vector<char> &buffer);

  const DeepSpeedCheckpoint &checkpoint;
  const RetargetOptions &options;
  int64_t tp;
  int stage;
  std::atomic<int64_t> bytesWritten{0};
  std::atomic<size_t> filesWritten{0};
};

} // namespace

Error Retargeter::plan() {
  if (checkpoint.getZeroStage() == 3 || stage == 3)
    return refuse(checkpoint.getFolder() +
                  ": retargeting ZeRO-3 checkpoints, or into ZeRO-3, is not "
                  "supported yet");
  if (stage != 1 && stage != 2)
    return refuse("--zero-stage " + std::to_string(stage) +
                  ": expected 1 or 2");
  if (options.dp < 1)
    return refuse("--dp " + std::to_string(options.dp) + ": expected >= 1");
  // Bounded before any map is built: the target grid is dp x tp ranks
  // (dp alone first, so that the product cannot overflow).
  int64_t world = std::min(options.dp, kMaxWorldSize + 1) * tp;
  if (std::string error =
          checkWorldSize(options.dp > kMaxWorldSize ? options.dp : world,
                         "the target's DP x TP world");
      !error.empty())
    return refuse("--dp " + std::to_string(options.dp) + ": " + error);
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  for (size_t p = 0; p < params.size(); ++p) {
    if (params[p].group >= groups.size())
      groups.resize(params[p].group + 1);
    groups[params[p].group].push_back(p);
  }
  for (const std::vector<size_t> &group : groups) {
    std::vector<ZeroGroupLayout> &perTp = layouts.emplace_back();
    for (int64_t t = 0; t < tp; ++t) {
      std::vector<int64_t> elements;
      for (size_t p : group)
        elements.push_back(*getNumElements(params[p].tpShapes[t]));
      perTp.push_back(layOutZeroGroup(elements, options.dp));
    }
  }
  // Each parameter's target map: its TP map, each TP shard cut by the
  // target's flattening.
  std::vector<ParamMap> sources, targets;
  for (size_t g = 0; g < groups.size(); ++g)
    for (auto [i, p] : llvm::enumerate(groups[g])) {
      const DeepSpeedParam &param = params[p];
      std::vector<ParamMap> inner;
      for (int64_t t = 0; t < tp; ++t) {
        Extents sizes;
        for (int64_t d = 0; d < options.dp; ++d)
          sizes.push_back(layouts[g][t].getSlice(i, d).count);
        Expected<ParamMap> cut =
            buildFlatRangeLayout(param.name, param.tpShapes[t], sizes);
        if (!cut)
          return cut.takeError();
        inner.push_back(std::move(*cut));
      }
      Expected<ParamMap> map = nestShardMaps(param.tpMap, inner);
      if (!map)
        return map.takeError();
      sources.push_back(param.map);
      targets.push_back(std::move(*map));
    }
  ReplicaPolicy policy;
  policy.kind = ReplicaPolicy::Lowest;
  for (size_t s = 0; s < 3; ++s) {
    Expected<TransferPrograms> planned = planTransfers(
        sources, targets, policy, getScalePower(kOptimizerStates[s]));
    if (!planned)
      return planned.takeError();
    programs[s] = std::move(*planned);
  }
  return Error::success();
}

/// The elements a batch of copies moves before its source pages are
/// released (16 MiB of fp32).
constexpr int64_t kBatchElements = int64_t(1) << 22;

void Retargeter::releaseSource(int64_t rank, const StridedCopy &copy,
                               const ProgramBuffers &buffers) const {
  // The span of the source view: its first element to its last.
  int64_t last = copy.source.offset;
  for (size_t d = 0; d < copy.shape.size(); ++d)
    last += (copy.shape[d] - 1) * copy.source.strides[d];
  const char *data = static_cast<const char *>(buffers.sources.at(rank));
  checkpoint.getOptimizerFile(rank).releasePages(
      data + copy.source.offset * 4, (last - copy.source.offset + 1) * 4);
}

void Retargeter::fillPartition(size_t g, int64_t d, int64_t t, size_t state,
                               std::vector<char> &buffer) {
  const ZeroGroupLayout &layout = layouts[g][t];
  buffer.assign(layout.partition * 4, 0); // Padding is zeros.
  int64_t target = d * tp + t;
  OptimizerState which = kOptimizerStates[state];
  // The parameters' fragments are disjoint: written in parallel, into the
  // one partition in memory.
  llvm::parallelFor(0, groups[g].size(), [&](size_t i) {
    FragmentSlice slice = layout.getSlice(i, d);
    if (slice.count == 0)
      return;
    const DeepSpeedParam &param = checkpoint.getParams()[groups[g][i]];
    ProgramBuffers buffers;
    for (int64_t rank = 0; rank < int64_t(param.slices.size()); ++rank)
      buffers.sources[rank] = checkpoint.getFragment(param, rank, which).data;
    buffers.targets[target] = buffer.data() + slice.offset * 4;
    // The copies into this rank's fragment, a few megabytes at a time, each
    // batch's source pages released once it is done: memory holds the
    // target partition and little of the inputs.
    const CopyProgram &whole = programs[state].at(param.name);
    CopyProgram batch;
    batch.sourceElements = whole.sourceElements;
    batch.targetElements[target] = slice.count;
    for (const StridedFill &fill : whole.fills)
      if (fill.targetBuffer == target)
        batch.fills.push_back(fill);
    auto run = [&] {
      executeOnCpu(batch, buffers, DType::F32, /*threads=*/1);
      for (const BufferPairCopies &pair : batch.pairs)
        for (const StridedCopy &copy : pair.copies)
          releaseSource(pair.sourceBuffer, copy, buffers);
      batch.pairs.clear();
      batch.fills.clear();
    };
    int64_t elements = 0;
    for (const BufferPairCopies &pair : whole.pairs) {
      if (pair.targetBuffer != target)
        continue;
      for (const StridedCopy &copy : pair.copies) {
        if (batch.pairs.empty() ||
            batch.pairs.back().sourceBuffer != pair.sourceBuffer)
          batch.pairs.push_back({pair.sourceBuffer, pair.targetBuffer, {}});
        batch.pairs.back().copies.push_back(copy);
        elements += *getNumElements(copy.shape);
        if (elements >= kBatchElements) {
          run();
          elements = 0;
        }
      }
    }
    run();
  });
}

/// The largest numeric storage key of `document`, plus one: where new
/// storages' keys start.
static int64_t getNextStorageKey(const PickleDocument &document) {
  int64_t next = 0;
  for (PickleRef ref = 0; ref < document.size(); ++ref) {
    const PickleValue &value = document.get(ref);
    int64_t key;
    if (value.kind == PickleValue::Storage &&
        !llvm::StringRef(value.text).getAsInteger(10, key))
      next = std::max(next, key + 1);
  }
  return next;
}

/// Maps ds_config's zero_optimization.stage under `root` to `stage`.
static void replaceStage(const PickleCursor &root, int stage,
                         PickleBuilder &builder,
                         llvm::DenseMap<PickleRef, PickleRef> &replaced) {
  std::optional<PickleCursor> config = root.find("ds_config");
  std::optional<PickleCursor> zero =
      config ? config->find("zero_optimization") : std::nullopt;
  if (std::optional<PickleCursor> old =
          zero ? zero->find("stage") : std::nullopt)
    replaced[old->getRef()] = builder.integer(stage);
}

Expected<Retargeter::OptimizerFile>
Retargeter::buildOptimizerStates(int64_t d, int64_t t) const {
  // The source's file of DP rank 0 and this TP rank is the template.
  const TorchFile &source = checkpoint.getOptimizerFile(t);
  const PickleDocument &from = source.getDocument();
  auto inSource = [&](Error error) {
    return refuse(source.getPath() + ": " + llvm::toString(std::move(error)));
  };
  PickleCursor root(from);
  Expected<PickleCursor> states = root.at("optimizer_state_dict");
  if (!states)
    return inSource(states.takeError());
  bool bf16Optimizer = !states->find("zero_stage");
  if (bf16Optimizer && stage != 1)
    return refuse(source.getPath() +
                  ": a BF16_Optimizer checkpoint, which is ZeRO-1 only, "
                  "cannot become ZeRO-" +
                  std::to_string(stage));
  Expected<PickleCursor> moments = states->at("base_optimizer_state");
  if (moments)
    moments = moments->at("state");
  if (!moments)
    return inSource(moments.takeError());
  Expected<std::vector<std::pair<int64_t, PickleCursor>>> adam =
      moments->getIntItems();
  if (!adam)
    return inSource(adam.takeError());
  Expected<PickleCursor> fp32 = states->at("single_partition_of_fp32_groups");
  if (!fp32)
    return inSource(fp32.takeError());
  PickleBuilder b;
  llvm::DenseMap<PickleRef, PickleRef> replaced;
  OptimizerFile file;
  int64_t nextKey = getNextStorageKey(from);
  auto replaceTensor = [&](const PickleCursor &old, size_t g, size_t state,
                           int64_t elements) {
    std::string key = std::to_string(nextKey++);
    file.storages.push_back({key, g, state, elements});
    replaced[old.getRef()] = b.tensor(b.storage(key, DType::F32, elements), 0,
                                      {elements}, {1}, old.get().requiresGrad);
  };
  std::vector<PickleRef> paddings, counts, mappings;
  for (size_t g = 0; g < groups.size(); ++g) {
    const ZeroGroupLayout &layout = layouts[g][t];
    if (g >= adam->size())
      return refuse(source.getPath() + ": no Adam state for group " +
                    std::to_string(g));
    for (auto [state, name] : {std::pair{1, "exp_avg"}, {2, "exp_avg_sq"}}) {
      Expected<PickleCursor> tensor = (*adam)[g].second.at(name);
      if (!tensor)
        return inSource(tensor.takeError());
      replaceTensor(*tensor, g, state, layout.partition);
    }
    Expected<PickleCursor> partition = fp32->at(g);
    if (!partition)
      return inSource(partition.takeError());
    // BF16_Optimizer keeps the padding of its fp32 partitions.
    replaceTensor(*partition, g, 0,
                  layout.partition -
                      (bf16Optimizer ? 0 : layout.getPadding(d)));
    paddings.push_back(b.integer(layout.getPadding(d)));
    counts.push_back(b.integer(options.dp));
    mappings.push_back(buildSliceMappings(b, g, d, t));
  }
  for (auto [key, value] : {std::pair{"group_paddings", b.list(paddings)},
                            {"partition_count", b.list(counts)},
                            {"param_slice_mappings", b.list(mappings)}}) {
    Expected<PickleCursor> old = states->at(key);
    if (!old)
      return inSource(old.takeError());
    replaced[old->getRef()] = value;
  }
  if (std::optional<PickleCursor> old = states->find("zero_stage"))
    replaced[old->getRef()] =
        b.enumMember(old->get().module, old->get().name, getStageMember(stage));
  replaceStage(root, stage, b, replaced);
  file.document = b.finish(b.copy(from, from.getRoot(), replaced));
  return file;
}

PickleRef Retargeter::buildSliceMappings(PickleBuilder &b, size_t g, int64_t d,
                                         int64_t t) const {
  std::vector<std::pair<PickleRef, PickleRef>> slices;
  for (auto [i, p] : llvm::enumerate(groups[g])) {
    FragmentSlice slice = layouts[g][t].getSlice(i, d);
    if (slice.count == 0)
      continue;
    slices.push_back(
        {b.string(checkpoint.getParams()[p].name),
         b.object("deepspeed.utils.tensor_fragment", "fragment_address",
                  b.dict({{b.string("numel"), b.integer(slice.count)},
                          {b.string("start"), b.integer(slice.offset)}}))});
  }
  return b.dict(slices, /*ordered=*/true);
}

Error Retargeter::writeOptimizerStates(int64_t d, int64_t t,
                                       llvm::StringRef folder) {
  Expected<OptimizerFile> built = buildOptimizerStates(d, t);
  if (!built)
    return built.takeError();
  const TorchFile &source = checkpoint.getOptimizerFile(t);
  llvm::SmallString<256> file(folder);
  // The source's names: bf16 runs prefix their optimizer files.
  std::string prefix =
      path::filename(source.getPath()).starts_with("bf16_") ? "bf16_" : "";
  path::append(file, prefix + "zero_pp_rank_" + std::to_string(d) +
                         "_mp_rank_" + llvm::formatv("{0:d2}", t).str() +
                         "_optim_states.pt");
  Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(file, built->document);
  if (!writer)
    return writer.takeError();
  std::vector<char> buffer;
  for (const NewStorage &storage : built->storages) {
    fillPartition(storage.group, d, t, storage.state, buffer);
    if (Error error = (*writer)->writeStorage(
            storage.key,
            {llvm::StringRef(buffer.data(), storage.elements * 4)}))
      return error;
    bytesWritten += storage.elements * 4;
  }
  if (Error error = (*writer)->copyStoragesFrom(source))
    return error;
  if (Error error = (*writer)->commit(/*durable=*/false))
    return error;
  ++filesWritten;
  return Error::success();
}

Error Retargeter::writeModelStates(int64_t t, llvm::StringRef folder) {
  const TorchFile &source = *checkpoint.getModelFiles()[t];
  const PickleDocument &from = source.getDocument();
  PickleCursor root(from);
  Expected<PickleCursor> module = root.at("module");
  if (!module)
    return refuse(source.getPath() + ": " + llvm::toString(module.takeError()));
  PickleBuilder b;
  llvm::DenseMap<PickleRef, PickleRef> replaced;
  // Each group's weights are views of one flat buffer, now padded for the
  // target's DP degree: the same offsets, another length.
  struct Flat {
    std::string key;
    int64_t bytes, realBytes;
  };
  std::vector<Flat> flats;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::optional<std::string> key;
    for (auto [i, p] : llvm::enumerate(groups[g])) {
      const std::string &name = checkpoint.getParams()[p].name;
      std::optional<PickleCursor> tensor = module->find(name);
      // (Each tensor names its storage by key; the values may differ.)
      if (!tensor || !tensor->is(PickleValue::Tensor) ||
          (key && from.get(tensor->get().storage).text != *key) ||
          tensor->get().offset != layouts[g][t].offsets[i])
        return refuse(source.getPath() + ": parameter '" + name +
                      "' is not where its group's flat buffer puts it");
      key = from.get(tensor->get().storage).text;
    }
    if (!key)
      continue;
    PickleRef storage = 0;
    for (PickleRef ref = 0; ref < from.size(); ++ref) {
      const PickleValue &old = from.get(ref);
      if (old.kind != PickleValue::Storage || old.text != *key)
        continue;
      if (!storage)
        storage = b.storage(*key, old.dtype, layouts[g][t].getPaddedLength());
      replaced[ref] = storage;
    }
    const PickleValue &flat = b.getValue(storage);
    int64_t size = getElementSize(flat.dtype);
    flats.push_back({*key, flat.elements * size, layouts[g][t].total * size});
  }
  replaceStage(root, stage, b, replaced);
  // The root's values the topology changes; the rest as they were.
  std::vector<std::pair<PickleRef, PickleRef>> items;
  Expected<std::vector<std::pair<std::string, PickleCursor>>> entries =
      root.getStringItems();
  if (!entries)
    return refuse(source.getPath() + ": " +
                  llvm::toString(entries.takeError()));
  for (const auto &[key, value] : *entries) {
    PickleRef copy = b.copy(from, value.getRef(), replaced);
    if (key == "dp_world_size")
      copy = b.integer(options.dp);
    // ZeRO-1 records no frozen parameters as None, ZeRO-2 as empty dicts.
    bool none = value.is(PickleValue::None) ||
                (value.is(PickleValue::Dict) && value.get().items.empty());
    if ((key == "frozen_param_shapes" || key == "frozen_param_fragments") &&
        none)
      copy = stage == 1 ? b.none() : b.dict({}, /*ordered=*/true);
    items.push_back({b.string(key), copy});
  }
  PickleDocument document =
      b.finish(b.dict(items, root.get().module == "collections"));
  llvm::SmallString<256> file(folder);
  path::append(file, path::filename(source.getPath()));
  Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(file, document);
  if (!writer)
    return writer.takeError();
  for (const Flat &flat : flats) {
    // The real elements; the padding, whatever the source held, zeros.
    llvm::StringRef kept =
        source.getStorageBytes(flat.key)->take_front(flat.realBytes);
    std::string zeros(flat.bytes - kept.size(), '\0');
    if (Error error = (*writer)->writeStorage(
            flat.key, {kept, zeros}, [&](llvm::StringRef chunk) {
              source.releasePages(chunk.data(), chunk.size()); // Read once.
            }))
      return error;
  }
  if (Error error = (*writer)->copyStoragesFrom(source))
    return error;
  if (Error error = (*writer)->commit(/*durable=*/false))
    return error;
  ++filesWritten;
  return Error::success();
}

Error Retargeter::write(llvm::StringRef folder) {
  // One file at a time, each partition's parameters in parallel: memory
  // holds one target partition.
  llvm::parallel::strategy = llvm::hardware_concurrency(options.threads);
  size_t total = tp + tp * options.dp;
  auto report = [&] {
    if (options.progress)
      options.progress(filesWritten, total, bytesWritten);
  };
  for (int64_t t = 0; t < tp; ++t) {
    if (Error error = writeModelStates(t, folder))
      return error;
    report();
  }
  for (int64_t d = 0; d < options.dp; ++d)
    for (int64_t t = 0; t < tp; ++t) {
      if (Error error = writeOptimizerStates(d, t, folder))
        return error;
      report();
    }
  return Error::success();
}

Expected<RetargetStats>
ucp::retargetCheckpoint(const DeepSpeedCheckpoint &checkpoint,
                        llvm::StringRef output,
                        const RetargetOptions &options) {
  auto start = std::chrono::steady_clock::now();
  Expected<llvm::StringRef> folder = getCheckpointFolder(output, "latest");
  if (!folder)
    return folder.takeError();
  Retargeter retargeter(checkpoint, options);
  if (Error error = retargeter.plan())
    return std::move(error);
  // DeepSpeed's load_checkpoint finds the tag through latest.
  if (Error error = writeCheckpointFolder(
          *folder, "latest",
          [&](llvm::StringRef staged) { return retargeter.write(staged); },
          options.syncOutputs))
    return std::move(error);
  RetargetStats stats;
  stats.files = retargeter.getFilesWritten() + 1;
  stats.bytesWritten = retargeter.getBytesWritten();
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return stats;
}

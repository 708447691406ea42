//===- RetargetTensorStates.cpp - The target's optimizer files ---------===//
//
// An optimizer file of the target is the source's of DP rank 0 and the same
// TP rank with what the topology decides replaced: each group's fp32
// partition and Adam moments (new storages, filled by the copy programs),
// the partition count, the stage, and for ZeRO-1/2 the group paddings and
// param_slice_mappings. Between ZeRO-1/2 and ZeRO-3 the optimizer's own
// dict changes form (DeepSpeedZeroOptimizer's and ZeRO-3's keys, the
// torch optimizer state under another name); every source key is either
// carried over, translated, or one the target's form derives anew, and a
// key of neither kind is refused rather than dropped.
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"

#include "ucp/Support/Error.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace path = llvm::sys::path;

/// The keys of the optimizer's dict as DeepSpeedZeroOptimizer (ZeRO-1/2)
/// and ZeRO-3 save them, in order.
static const std::vector<llvm::StringRef> kZero12Keys = {
    "loss_scaler", "dynamic_loss_scale",   "overflow",
    "clip_grad",   "base_optimizer_state", "single_partition_of_fp32_groups",
    "zero_stage",  "group_paddings",       "partition_count",
    "ds_version",  "param_slice_mappings"};
static const std::vector<llvm::StringRef> kZero3Keys = {
    "zero_stage",      "loss_scaler",          "dynamic_loss_scale", "overflow",
    "partition_count", "optimizer_state_dict", "fp32_flat_groups"};

/// The keys of the torch optimizer's state_dict and of the fp32
/// partitions in a stage's form.
static llvm::StringRef getBaseKey(bool zero3) {
  return zero3 ? "optimizer_state_dict" : "base_optimizer_state";
}
static llvm::StringRef getFp32Key(bool zero3) {
  return zero3 ? "fp32_flat_groups" : "single_partition_of_fp32_groups";
}

/// DeepSpeed's ZeroStageEnum member of ZeRO stage `stage`.
static llvm::StringRef getStageMember(int stage) {
  return stage == 1 ? "optimizer_states" : stage == 2 ? "gradients" : "weights";
}

/// ds_config's gradient_clipping under `root` (DeepSpeed's default 0).
static double getGradientClipping(const PickleCursor &root) {
  std::optional<PickleCursor> config = root.find("ds_config");
  std::optional<PickleCursor> clipping =
      config ? config->find("gradient_clipping") : std::nullopt;
  if (!clipping)
    return 0;
  Expected<double> value = clipping->getNumber();
  if (!value) {
    llvm::consumeError(value.takeError());
    return 0;
  }
  return *value;
}

/// The entries of the target's optimizer dict `states` (of the source file
/// `sourcePath`, whose root is `root`): in the same ZeRO form, the source's
/// keys in order with `values` in place of theirs; in the other form, that
/// form's keys in its order, carried over or derived.
Expected<std::vector<std::pair<PickleRef, PickleRef>>>
Retargeter::buildOptimizerDictItems(
    llvm::StringRef sourcePath, const PickleCursor &root,
    const PickleCursor &states, llvm::StringMap<PickleRef> &values,
    PickleBuilder &b, llvm::DenseMap<PickleRef, PickleRef> &replaced) const {
  Expected<std::vector<std::pair<std::string, PickleCursor>>> entries =
      states.getStringItems();
  if (!entries)
    return makeError(sourcePath + ": " + llvm::toString(entries.takeError()));
  std::vector<std::pair<PickleRef, PickleRef>> items;
  if (isZero3Source() == isZero3Target()) {
    // The same form: the source's keys in order, some with new values.
    for (const auto &[key, value] : *entries)
      items.push_back({b.string(key), values.count(key)
                                          ? values[key]
                                          : b.copy(root.getDocument(),
                                                   value.getRef(), replaced)});
  } else {
    // The other form, in its order: what both forms hold is carried over,
    // what only the target's holds is derived.
    llvm::ArrayRef<llvm::StringRef> sourceKeys =
        isZero3Source() ? kZero3Keys : kZero12Keys;
    llvm::ArrayRef<llvm::StringRef> targetKeys =
        isZero3Target() ? kZero3Keys : kZero12Keys;
    for (const auto &[key, value] : *entries)
      if (!llvm::is_contained(sourceKeys, key))
        return makeError(states.getPath() + "['" + key +
                         "']: not a key this converter knows how to "
                         "carry into ZeRO-" +
                         std::to_string(stage));
    // What only DeepSpeedZeroOptimizer's form holds, from the config and
    // the file.
    if (!isZero3Target()) {
      values["clip_grad"] = b.number(getGradientClipping(root));
      if (std::optional<PickleCursor> version = root.find("ds_version"))
        values["ds_version"] =
            b.copy(root.getDocument(), version->getRef(), replaced);
    }
    for (llvm::StringRef key : targetKeys) {
      std::optional<PickleCursor> old = states.find(key);
      if (!values.count(key) && !old)
        return makeError(states.getPath() + ": no '" + key + "'");
      items.push_back({b.string(key), values.count(key)
                                          ? values[key]
                                          : b.copy(root.getDocument(),
                                                   old->getRef(), replaced)});
    }
  }
  return items;
}

Expected<Retargeter::TargetFile>
Retargeter::buildTensorStates(int64_t d, int64_t t) const {
  // The source's file of DP rank 0 and this model-parallel rank is the
  // template.
  const TorchFile &source = checkpoint.getOptimizerFile(getTemplateRank(t));
  const PickleDocument &from = source.getDocument();
  PickleCursor root(from);
  Expected<PickleCursor> states = root.at("optimizer_state_dict");
  if (!states)
    return makeError(source.getPath() + ": " +
                     llvm::toString(states.takeError()));
  PickleBuilder b;
  llvm::DenseMap<PickleRef, PickleRef> replaced;
  TargetFile file;
  int64_t nextKey = getNextStorageKey(from);
  if (Error error = replaceOptimizerStates(source, *states, d, t, nextKey, b,
                                           replaced, file.storages))
    return std::move(error);
  replaceZeroStage(root, b, replaced);
  if (epSize)
    replacePath(root, kAutoEpSizePath, b.integer(epSize), replaced);
  file.document = b.finish(b.copy(from, from.getRoot(), replaced));
  return file;
}

Error Retargeter::replaceOptimizerStates(
    const TorchFile &source, const PickleCursor &states, int64_t d, int64_t t,
    int64_t &nextKey, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced,
    std::vector<NewStorage> &storages) const {
  const PickleDocument &from = source.getDocument();
  PickleCursor root(from);
  auto inSource = [&](Error error) {
    return makeError(source.getPath() + ": " +
                     llvm::toString(std::move(error)));
  };
  bool bf16Optimizer = !states.find("zero_stage");
  if (bf16Optimizer && stage != 1)
    return makeError(source.getPath() +
                     ": a BF16_Optimizer checkpoint, which is ZeRO-1 "
                     "only, cannot become ZeRO-" +
                     std::to_string(stage));
  Expected<PickleCursor> base = states.at(getBaseKey(isZero3Source()));
  if (!base)
    return inSource(base.takeError());
  Expected<PickleCursor> moments = base->at("state");
  if (!moments)
    return inSource(moments.takeError());
  Expected<std::vector<std::pair<int64_t, PickleCursor>>> adam =
      moments->getIntItems();
  if (!adam)
    return inSource(adam.takeError());
  Expected<PickleCursor> fp32 = states.at(getFp32Key(isZero3Source()));
  if (!fp32)
    return inSource(fp32.takeError());
  auto newTensor = [&](const PickleCursor &old, size_t g, size_t state,
                       int64_t elements) {
    std::string key = std::to_string(nextKey++);
    storages.push_back(
        {NewStorage::Partition, key, DType::F32, g, state, elements, 0});
    return replaced[old.getRef()] =
               b.tensor(b.storage(key, DType::F32, elements), 0, {elements},
                        {1}, old.get().requiresGrad);
  };
  // DeepSpeedZeroOptimizer saves its fp32 partitions without the padding;
  // BF16_Optimizer and ZeRO-3 keep it, as every optimizer keeps it in the
  // moments.
  bool stripsPadding = !isZero3Target() && !bf16Optimizer;
  std::vector<PickleRef> partitions, paddings, counts, mappings;
  for (size_t g = 0; g < groups.size(); ++g) {
    GroupRank rank = getGroupRank(g, d, t);
    const ZeroGroupLayout &layout = layouts[g][rank.outer];
    // Before the first step (a fresh checkpoint) there are no moments.
    if (checkpoint.hasState(g, TensorState::ExpAvg)) {
      if (g >= adam->size())
        return makeError(source.getPath() + ": no Adam state for group " +
                         std::to_string(g));
      for (auto [state, name] : {std::pair{1, "exp_avg"}, {2, "exp_avg_sq"}}) {
        Expected<PickleCursor> tensor = (*adam)[g].second.at(name);
        if (!tensor)
          return inSource(tensor.takeError());
        newTensor(*tensor, g, state, layout.partition);
      }
    }
    Expected<PickleCursor> partition = fp32->at(g);
    if (!partition)
      return inSource(partition.takeError());
    partitions.push_back(
        newTensor(*partition, g, 0,
                  layout.partition -
                      (stripsPadding ? layout.getPadding(rank.inner) : 0)));
    if (!isZero3Target()) {
      paddings.push_back(b.integer(layout.getPadding(rank.inner)));
      counts.push_back(b.integer(getGroupDpDegree(g)));
      mappings.push_back(buildSliceMappings(b, g, d, t));
    }
  }
  if (epSize) {
    Expected<PickleCursor> paramGroups = base->at("param_groups");
    if (!paramGroups)
      return inSource(paramGroups.takeError());
    replaceExpertGroups(states, *paramGroups, d, t, b, replaced);
  }
  // What the topology decides in the target's form of the optimizer dict.
  llvm::StringMap<PickleRef> values;
  values[getBaseKey(isZero3Target())] = b.copy(from, base->getRef(), replaced);
  values[getFp32Key(isZero3Target())] = b.list(partitions);
  if (std::optional<PickleCursor> old = states.find("zero_stage"))
    values["zero_stage"] =
        b.enumMember(old->get().module, old->get().name, getStageMember(stage));
  if (isZero3Target()) {
    values["partition_count"] = b.integer(options.dp);
  } else {
    values["group_paddings"] = b.list(paddings);
    values["partition_count"] = b.list(counts);
    values["param_slice_mappings"] = b.list(mappings);
  }
  Expected<std::vector<std::pair<PickleRef, PickleRef>>> items =
      buildOptimizerDictItems(source.getPath(), root, states, values, b,
                              replaced);
  if (!items)
    return items.takeError();
  replaced[states.getRef()] =
      b.dict(*items, states.get().module == "collections");
  return Error::success();
}

void Retargeter::replaceZeroStage(
    const PickleCursor &root, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced) const {
  std::optional<PickleCursor> recorded = findPath(root, kStagePath);
  Expected<int64_t> value =
      recorded ? recorded->getInt() : Expected<int64_t>(-1);
  if (!value)
    llvm::consumeError(value.takeError());
  else if (*value == 0 && stage == 1)
    return;
  replacePath(root, kStagePath, b.integer(stage), replaced);
}

PickleRef Retargeter::buildSliceMappings(PickleBuilder &b, size_t g, int64_t d,
                                         int64_t t) const {
  std::vector<std::pair<PickleRef, PickleRef>> slices;
  GroupRank rank = getGroupRank(g, d, t);
  for (auto [i, p] : llvm::enumerate(getGroupParams(g, rank.outer))) {
    FragmentSlice slice = layouts[g][rank.outer].getSlice(i, rank.inner);
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

Error Retargeter::writeTensorStates(int64_t d, int64_t t,
                                    llvm::StringRef folder) {
  Expected<TargetFile> built = buildTensorStates(d, t);
  if (!built)
    return built.takeError();
  const TorchFile &source = checkpoint.getOptimizerFile(getTemplateRank(t));
  llvm::SmallString<256> file(folder);
  // The source's names: bf16 runs prefix their optimizer files.
  path::append(file, checkpoint.getOptimizerFilePrefix() + "zero_pp_rank_" +
                         std::to_string(d) + "_mp_rank_" +
                         llvm::formatv("{0:d2}", t).str() + "_optim_states.pt");
  return writeTargetFile(file, *built, source, d, t, /*releaseSource=*/false);
}

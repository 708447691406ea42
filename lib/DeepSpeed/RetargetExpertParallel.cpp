//===- RetargetExpertParallel.cpp - An AutoEP checkpoint at another EP size
//===//
//
// An AutoEP checkpoint's routed experts form a group of their own, each
// parameter `[num_experts, ...]` placed uniformly over the EP ranks (EP
// rank e holds experts [e * E_local, (e + 1) * E_local)) and each EP
// rank's block partitioned over its expert-data-parallel ranks, grid rank
// `edp * autoep_size + ep`. At another autoep_size the placement is built
// anew and everything else follows the shared planning; what the files
// record of it is rewritten here: the experts' EP-local shapes, every
// ds_autoep_layers record (the EP degree, the local experts, the group
// name, the EDP world, and the writing rank's EP and EDP ranks and experts),
// ds_config's autoep_size, the expert param group's name (`ep_size_<N>`,
// which DeepSpeed itself leaves at the source's) and ZeRO-3's
// ds_zero_partition_groups. The per-expert files of ZeRO-1/2 hold no
// topology and are copied as they are; from a Universal folder, which has
// none, they are made from the fp32 masters in the model's dtype, and
// universal_checkpoint_info gets back the form a run saves (the layers'
// records whole, the expert patterns as searched from the start).
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"

#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

Error Retargeter::checkExpertParallel() const {
  std::string flag = "--autoep-size " + std::to_string(epSize);
  if (!checkpoint.getAutoEpSize())
    return makeError(flag + ": " + checkpoint.getFolder() +
                     " has no AutoEP layers");
  if (epSize < 1)
    return makeError(flag + ": expected >= 1");
  if (tp != 1)
    return makeError("--tp " + std::to_string(tp) +
                     ": an AutoEP checkpoint has no tensor parallelism");
  if (!options.targetMaps.empty())
    return makeError("--target-map: an AutoEP checkpoint's experts are "
                     "placed by --autoep-size");
  if (isZero3Source() != isZero3Target())
    return makeError(
        checkpoint.getFolder() + ": an AutoEP checkpoint of ZeRO-" +
        std::to_string(checkpoint.getZeroStage()) + " cannot become ZeRO-" +
        std::to_string(stage) +
        " (its experts are per-expert files under ZeRO-1/2 and partitions "
        "under ZeRO-3; DeepSpeed refuses the move too)");
  for (const AutoEpLayer &layer : checkpoint.getAutoEpLayers())
    if (layer.numExperts % epSize)
      return makeError(
          flag + ": does not divide the " + std::to_string(layer.numExperts) +
          " experts of AutoEP layer " + std::to_string(layer.moeLayerId) +
          " (" + layer.modulePath + ")");
  if (options.dp % epSize)
    return makeError(flag + ": does not divide the target's world size " +
                     std::to_string(options.dp) + " (--dp)");
  return Error::success();
}

Expected<ParamMap>
Retargeter::buildTargetExpertMap(const DeepSpeedParam &param) const {
  AutoEpLayer layer = checkpoint.getAutoEpLayers()[*param.expertLayer];
  layer.localExperts = layer.numExperts / epSize;
  layer.epSize = epSize;
  Extents localShape = param.tpShapes.front();
  localShape.front() = layer.localExperts;
  return buildAutoEpExpertMap(param.name, layer, localShape);
}

/// Maps the values of `dict`'s string keys in `values` to theirs.
static void
replaceFields(const PickleCursor &dict,
              llvm::ArrayRef<std::pair<llvm::StringRef, PickleRef>> values,
              llvm::DenseMap<PickleRef, PickleRef> &replaced) {
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      dict.getStringItems();
  if (!items) { // The reader checked every record.
    llvm::consumeError(items.takeError());
    return;
  }
  for (const auto &[key, value] : *items)
    for (const auto &[name, ref] : values)
      if (key == name)
        replaced[value.getRef()] = ref;
}

/// `dict` again with the values of its string keys in `values` replaced
/// (a new dict: its values may be shared with others).
static PickleRef
rebuildDict(const PickleCursor &dict,
            llvm::ArrayRef<std::pair<llvm::StringRef, PickleRef>> values,
            PickleBuilder &b, llvm::DenseMap<PickleRef, PickleRef> &replaced) {
  std::vector<std::pair<PickleRef, PickleRef>> items;
  const PickleDocument &from = dict.getDocument();
  const std::vector<PickleRef> &old = dict.get().items;
  for (size_t i = 0; i + 1 < old.size(); i += 2) {
    PickleRef value = b.copy(from, old[i + 1], replaced);
    for (const auto &[name, ref] : values)
      if (from.get(old[i]).kind == PickleValue::String &&
          from.get(old[i]).text == name)
        value = ref;
    items.push_back({b.copy(from, old[i], replaced), value});
  }
  return b.dict(items, dict.get().module == "collections");
}

/// Maps the experts' shapes in param_shapes under `root` to `localShapes`,
/// in the form the source records them (AutoEP runs save plain tuples).
static void
replaceParamShapes(const PickleCursor &root,
                   const llvm::StringMap<const Extents *> &localShapes,
                   PickleBuilder &b,
                   llvm::DenseMap<PickleRef, PickleRef> &replaced) {
  std::optional<PickleCursor> shapes = root.find("param_shapes");
  Expected<std::vector<PickleCursor>> perGroup =
      shapes ? shapes->getItems() : std::vector<PickleCursor>();
  if (!perGroup) { // The reader checked them.
    llvm::consumeError(perGroup.takeError());
    return;
  }
  for (const PickleCursor &group : *perGroup) {
    Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
        group.getStringItems();
    if (!items) {
      llvm::consumeError(items.takeError());
      continue;
    }
    for (const auto &[name, shape] : *items)
      if (const Extents *local = localShapes.lookup(name)) {
        std::vector<PickleRef> extents;
        for (int64_t extent : *local)
          extents.push_back(b.integer(extent));
        replaced[shape.getRef()] =
            shape.get().name == "Size" ? b.size(*local) : b.tuple(extents);
      }
  }
}

void Retargeter::replaceExpertShapes(
    const PickleCursor &root, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced) const {
  llvm::StringMap<const Extents *> localShapes;
  for (const std::vector<size_t> &group : groups)
    for (size_t p : group)
      if (checkpoint.getParams()[p].expertLayer)
        localShapes[checkpoint.getParams()[p].name] = &tpShapes[p].front();
  replaceParamShapes(root, localShapes, b, replaced);
}

/// universal_checkpoint_info `info` under `root` as a run saves it, where
/// a Universal folder holds the converter's cut form: the layers' records
/// whole (the file's own ds_autoep_layers), each expert pattern searched
/// from the start.
static void
restoreUniversalInfo(const PickleCursor &root, const PickleCursor &info,
                     PickleBuilder &b,
                     llvm::DenseMap<PickleRef, PickleRef> &replaced) {
  std::optional<PickleCursor> layers = root.find("ds_autoep_layers");
  std::optional<PickleCursor> cut = info.find("ds_autoep_layers");
  if (layers && cut)
    replaced[cut->getRef()] =
        b.copy(root.getDocument(), layers->getRef(), replaced);
  std::optional<PickleCursor> patterns = info.find("expert_parameter_patterns");
  Expected<std::vector<PickleCursor>> items =
      patterns ? patterns->getItems() : std::vector<PickleCursor>();
  if (!items) { // The reader checked them.
    llvm::consumeError(items.takeError());
    return;
  }
  std::vector<PickleRef> whole;
  for (const PickleCursor &item : *items) {
    llvm::StringRef text = item.get().text;
    whole.push_back(
        b.string(text.starts_with(".*") ? text.str() : ".*" + text.str()));
  }
  if (patterns)
    replaced[patterns->getRef()] = b.list(whole);
}

void Retargeter::replaceExpertParallel(
    const PickleCursor &root, int64_t world, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced) const {
  replacePath(root, kAutoEpSizePath, b.integer(epSize), replaced);
  replaceExpertShapes(root, b, replaced);
  // Every record of the layers, where the file keeps them (the legacy key
  // and universal_checkpoint_info's copy included), as rank `world` writes
  // it.
  int64_t epRank = world % epSize, edpRank = world / epSize;
  std::vector<PickleCursor> lists;
  for (llvm::StringRef key : {"ds_autoep_layers", "autoep_layers"})
    if (std::optional<PickleCursor> list = root.find(key))
      lists.push_back(*list);
  std::optional<PickleCursor> info = root.find("universal_checkpoint_info");
  std::optional<PickleCursor> infoList =
      info ? info->find("ds_autoep_layers") : std::nullopt;
  if (infoList)
    lists.push_back(*infoList);
  for (const PickleCursor &list : lists) {
    Expected<std::vector<PickleCursor>> records = list.getItems();
    if (!records) {
      llvm::consumeError(records.takeError());
      continue;
    }
    for (const PickleCursor &record : *records) {
      std::optional<PickleCursor> experts = record.find("num_experts");
      if (!experts)
        continue;
      Expected<int64_t> count = experts->getInt();
      if (!count || *count % epSize) { // Checked by the reader.
        llvm::consumeError(count.takeError());
        continue;
      }
      int64_t local = *count / epSize;
      replaceFields(
          record,
          {{"num_local_experts", b.integer(local)},
           {"ep_size", b.integer(epSize)},
           {"ep_group_name", b.string(getExpertGroupName())},
           {"ep_rank", b.integer(epRank)},
           {"expert_data_parallel_rank", b.integer(edpRank)},
           {"expert_data_parallel_world_size", b.integer(options.dp / epSize)},
           {"global_expert_start", b.integer(epRank * local)},
           {"global_expert_end", b.integer((epRank + 1) * local)}},
          replaced);
    }
  }
  if (checkpoint.isUniversal() && info)
    restoreUniversalInfo(root, *info, b, replaced);
}

void Retargeter::replaceExpertGroups(
    const PickleCursor &states, const PickleCursor &paramGroups, int64_t d,
    int64_t t, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced) const {
  // The expert group's name is the target's; its hyper-parameters stay
  // the source's.
  if (Expected<std::vector<PickleCursor>> entries = paramGroups.getItems()) {
    for (auto [g, entry] : llvm::enumerate(*entries))
      if (g < groups.size() && isExpertGroup(g) && entry.find("name"))
        replaced[entry.getRef()] = rebuildDict(
            entry, {{"name", b.string(getExpertGroupName())}}, b, replaced);
  } else {
    llvm::consumeError(entries.takeError());
  }
  // ZeRO-3: which ranks partition each sub-group (its group's DP or EDP
  // ranks), and this rank among them.
  std::optional<PickleCursor> partitionGroups =
      states.find("ds_zero_partition_groups");
  if (!partitionGroups)
    return;
  Expected<std::vector<PickleCursor>> entries = partitionGroups->getItems();
  if (!entries) {
    llvm::consumeError(entries.takeError());
    return;
  }
  for (auto [g, entry] : llvm::enumerate(*entries)) {
    if (g >= groups.size() || !entry.is(PickleValue::Dict))
      continue;
    GroupRank rank = getGroupRank(g, d, t);
    std::vector<PickleRef> ranks;
    for (int64_t i = 0; i < getGroupDpDegree(g); ++i)
      ranks.push_back(b.integer(i * outerDegrees[g] + rank.outer));
    std::vector<std::pair<llvm::StringRef, PickleRef>> values = {
        {"partition_count", b.integer(getGroupDpDegree(g))},
        {"partition_rank", b.integer(rank.inner)},
        {"partition_ranks", b.list(ranks)}};
    if (isExpertGroup(g))
      values.push_back(
          {"group_names", b.list({b.string(getExpertGroupName())})});
    replaced[entry.getRef()] = rebuildDict(entry, values, b, replaced);
  }
}

/// The dtype of the weights in the module of `model`'s model states.
static Expected<DType> getModuleType(const TorchFile &model) {
  PickleCursor root(model.getDocument());
  Expected<PickleCursor> module = root.at("module");
  Expected<std::vector<std::pair<std::string, PickleCursor>>> weights =
      module ? module->getStringItems() : module.takeError();
  if (!weights)
    return weights.takeError();
  for (const auto &[name, weight] : *weights)
    if (weight.is(PickleValue::Tensor))
      return model.getDocument().get(weight.get().storage).dtype;
  return makeError(module->getPath() + ": no weight, so the dtype of "
                                       "the experts' files is unknown");
}

Error Retargeter::writeExpertFilesFromMasters(llvm::StringRef folder) {
  const TorchFile &model = *checkpoint.getModelFiles().front();
  Expected<DType> type = getModuleType(model);
  if (!type)
    return makeError(model.getPath() + ": " + llvm::toString(type.takeError()));
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  for (auto [l, layer] : llvm::enumerate(checkpoint.getAutoEpLayers()))
    for (int64_t g = 0; g < layer.numExperts; ++g) {
      // A plain dict of expert g's slice of each of the layer's weights,
      // each a storage of its own, as AutoEP saves them.
      PickleBuilder b;
      std::vector<std::pair<PickleRef, PickleRef>> items;
      std::vector<MasterRun> runs;
      for (const DeepSpeedParam &param : params)
        if (param.expertLayer == l) {
          Extents shape(param.tpMap.logicalShape.begin() + 1,
                        param.tpMap.logicalShape.end());
          int64_t elements = *getNumElements(shape);
          PickleRef storage =
              b.storage(std::to_string(runs.size()), *type, elements);
          items.push_back(
              {b.string(param.name + "." + std::to_string(g)),
               b.tensor(storage, 0, shape, getRowMajorStrides(shape), false)});
          runs.push_back({&param, g * elements, elements});
        }
      llvm::SmallString<256> file(folder);
      path::append(file, "layer_" + std::to_string(layer.moeLayerId) +
                             "_expert_" + std::to_string(g) +
                             "_mp_rank_00_model_states.pt");
      if (Error error = writeMastersFile(file, b.finish(b.dict(items, false)),
                                         runs, *type))
        return error;
    }
  return Error::success();
}

Error Retargeter::writeExpertFiles(llvm::StringRef folder) {
  if (checkpoint.isUniversal())
    return writeExpertFilesFromMasters(folder);
  for (const std::vector<std::string> &layer : checkpoint.getExpertFiles())
    for (const std::string &file : layer)
      if (Error error = copySourceFile(file, folder))
        return error;
  return Error::success();
}

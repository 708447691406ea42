//===- RetargetTensorParallel.cpp - The target's TP maps ------------------===//
//
// At the source's TP degree every parameter keeps its TP map. At another
// degree the map comes from the split rules that universal_checkpoint_info
// names (replicated, split along a dimension, vocabulary, sub-parameters),
// applied by the layout library (lowerLegacyParam) at the new degree; the
// same rules must first reproduce the source's recorded shards at the
// source's degree, or the parameter is refused. A split DeepSpeed may make
// by whole kv heads needs the model's num_kv_heads, which a checkpoint
// records only sometimes: without it such a parameter is refused rather
// than split by a guess. A parameter whose map the checkpoint carries
// (affine_map) moves to another degree only with --target-map, but to TP 1.
// A retarget to TP 1, where every tensor is whole, records where the
// source's shards were (ucp_tp_maps, the source's TP maps at its degree),
// and later retargets carry the record on: going back to that degree needs
// no flag.
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Layout/SplitSizes.h"
#include "ucp/Layout/TensorParallelLayouts.h"

#include "ucp/Support/Error.h"
#include "llvm/ADT/StringMap.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;

/// The shape of each rank's shard of `map`, in rank order, or an error
/// naming the rank that holds no single shard.
static Expected<std::vector<Extents>> getShardShapes(const ParamMap &map) {
  std::vector<Extents> shapes;
  for (int64_t rank = 0; rank < map.worldSize; ++rank) {
    auto shard = llvm::find_if(map.shards,
                               [&](const Shard &s) { return s.rank == rank; });
    if (shard == map.shards.end())
      return makeError("parameter '" + map.name + "': TP rank " +
                       std::to_string(rank) + " would hold nothing");
    shapes.push_back(shard->shape);
  }
  return shapes;
}

/// Lists shapes as "(a, b), (c, d)".
static std::string formatShapes(llvm::ArrayRef<Extents> shapes) {
  std::string list;
  for (const Extents &shape : shapes) {
    list += list.empty() ? "(" : ", (";
    for (size_t d = 0; d < shape.size(); ++d)
      list += (d ? ", " : "") + std::to_string(shape[d]);
    list += ")";
  }
  return list;
}

/// `categories` with sub_param_shard_widths for `tp` ranks: each recorded
/// entry's sub-parameters split again by the rule.
static Expected<LegacyCategories>
getTargetCategories(LegacyCategories categories, int64_t tp) {
  categories.affineMaps.clear(); // They hold at the source's degree.
  for (auto &[key, widths] : categories.subParamShardWidths) {
    auto category = llvm::find_if(categories.subParams, [&](const auto &c) {
      return llvm::is_contained(c.patterns, key);
    });
    if (category == categories.subParams.end())
      return makeError("sub_param_shard_widths['" + key +
                       "']: no parameter_with_sub_params entry has "
                       "this pattern, so its sub-parameters' sizes "
                       "at another TP degree are unknown");
    widths.clear();
    for (int64_t size : category->subSizes)
      widths.push_back(getShardSizes(
          size, tp, {categories.numKvHeads, categories.grainSize, key}));
  }
  return categories;
}

Error Retargeter::takeTargetMaps() {
  llvm::StringMap<const ParamMap *> byName;
  for (const ParamMap &map : options.targetMaps) {
    if (map.worldSize != tp)
      return makeError("--target-map: parameter '" + map.name +
                       "' is mapped over " + std::to_string(map.worldSize) +
                       " ranks, and the target's TP degree is " +
                       std::to_string(tp));
    byName[map.name] = &map;
  }
  for (const DeepSpeedParam &param : checkpoint.getParams()) {
    auto found = byName.find(param.name);
    if (found == byName.end())
      return makeError("--target-map: no map of parameter '" + param.name +
                       "'");
    if (Error error = takeMap(param, *found->second,
                              "--target-map: parameter '" + param.name +
                                  "' is mapped"))
      return error;
    byName.erase(found);
  }
  // Frozen parameters' maps are taken by planFrozenParams.
  for (const CheckpointTensor &tensor : checkpoint.getTensors())
    if (tensor.role == CheckpointTensor::Role::Frozen)
      byName.erase(tensor.name);
  if (!byName.empty())
    return makeError("--target-map: parameter '" +
                     byName.begin()->first().str() +
                     "' is not a trainable parameter of the checkpoint");
  return Error::success();
}

/// `maps` as a map document, in JSON.
static llvm::json::Value getMapDocument(llvm::ArrayRef<ParamMap> maps) {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeMapDocument(maps, os);
  Expected<llvm::json::Value> document = llvm::json::parse(os.str());
  if (!document) { // What writeMapDocument writes always parses.
    llvm::consumeError(document.takeError());
    return nullptr;
  }
  return std::move(*document);
}

std::optional<PickleRef> Retargeter::buildAffineMap(PickleBuilder &b) const {
  if (!options.targetMaps.empty())
    return b.json(getMapDocument(options.targetMaps));
  // Back at a degree whose run carried an affine_map, the recorded maps
  // that were it.
  const std::optional<LegacyCategories> &recorded = checkpoint.getCategories();
  if (!changesTp() || !recorded)
    return std::nullopt;
  auto names = recorded->affineAtDegree.find(tp);
  auto maps = recorded->mapsAtDegree.find(tp);
  if (names == recorded->affineAtDegree.end() ||
      maps == recorded->mapsAtDegree.end())
    return std::nullopt;
  std::vector<ParamMap> affine;
  for (const auto &[name, map] : maps->second)
    if (names->second.count(name))
      affine.push_back(map);
  if (affine.empty())
    return std::nullopt;
  return b.json(getMapDocument(affine));
}

std::optional<PickleRef>
Retargeter::buildRecordedAffineNames(PickleBuilder &b) const {
  std::map<int64_t, std::set<std::string>> degrees;
  const std::optional<LegacyCategories> &recorded = checkpoint.getCategories();
  if (recorded) {
    for (const auto &[degree, names] : recorded->affineAtDegree)
      if (degree != tp && degree != sourceTp)
        degrees[degree] = names;
    // Recorded at the source's degree below: its affine_map's names.
    if (tp == 1 && sourceTp > 1)
      for (const auto &[name, map] : recorded->affineMaps)
        degrees[sourceTp].insert(name);
  }
  if (degrees.empty())
    return std::nullopt;
  llvm::json::Object record;
  for (const auto &[degree, names] : degrees)
    record[std::to_string(degree)] =
        llvm::json::Array(std::vector<llvm::json::Value>(names.begin(),
                                                         names.end()));
  return b.json(llvm::json::Value(std::move(record)));
}

std::optional<PickleRef>
Retargeter::buildRecordedMaps(PickleBuilder &b) const {
  std::map<int64_t, std::vector<ParamMap>> degrees;
  if (const std::optional<LegacyCategories> &recorded =
          checkpoint.getCategories())
    for (const auto &[degree, maps] : recorded->mapsAtDegree)
      if (degree != tp && degree != sourceTp)
        for (const auto &entry : maps)
          degrees[degree].push_back(entry.second);
  // At TP 1 every tensor is whole: nothing else would say where the
  // source's shards were. At another degree the shards say it themselves,
  // and a run there saves no record.
  if (tp == 1 && sourceTp > 1) {
    for (const DeepSpeedParam &param : checkpoint.getParams())
      if (param.tpMap.worldSize == sourceTp)
        degrees[sourceTp].push_back(param.tpMap);
    for (const CheckpointTensor &tensor : checkpoint.getTensors())
      if (const ParamMap *map = checkpoint.getFrozenTpMap(tensor.name))
        degrees[sourceTp].push_back(*map);
  }
  if (degrees.empty())
    return std::nullopt;
  llvm::json::Object record;
  for (const auto &[degree, maps] : degrees)
    record[std::to_string(degree)] = getMapDocument(maps);
  return b.json(llvm::json::Value(std::move(record)));
}

Error Retargeter::takeMap(const DeepSpeedParam &param, const ParamMap &map,
                          const std::string &origin) {
  if (map.logicalShape != param.tpMap.logicalShape)
    return makeError(origin + " as " + formatShapes({map.logicalShape}) +
                     ", and the checkpoint's is " +
                     formatShapes({param.tpMap.logicalShape}));
  Expected<std::vector<Extents>> shapes = getShardShapes(map);
  if (!shapes)
    return shapes.takeError();
  tpMaps.push_back(map);
  tpShapes.push_back(std::move(*shapes));
  return Error::success();
}

Error Retargeter::planTensorParallel() {
  if (!options.targetMaps.empty())
    return takeTargetMaps();
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  if (!changesTp()) {
    for (const DeepSpeedParam &param : params) {
      if (!param.expertLayer || !changesEp()) {
        tpMaps.push_back(param.tpMap);
        tpShapes.push_back(param.tpShapes);
        continue;
      }
      // An expert at another AutoEP size: its experts over the new EP
      // ranks.
      Expected<ParamMap> map = buildTargetExpertMap(param);
      Expected<std::vector<Extents>> shapes =
          map ? getShardShapes(*map) : map.takeError();
      if (!shapes)
        return shapes.takeError();
      tpMaps.push_back(std::move(*map));
      tpShapes.push_back(std::move(*shapes));
    }
    return Error::success();
  }
  const std::optional<LegacyCategories> &recorded = checkpoint.getCategories();
  if (!recorded)
    return makeError(
        checkpoint.getFolder() + ": --tp " + std::to_string(tp) +
        ": a new TP degree needs the split rules of universal_checkpoint_info, "
        "which the model states lack");
  LegacyCategories source = *recorded;
  if (options.numKvHeads) {
    if (source.numKvHeads && *source.numKvHeads != *options.numKvHeads)
      return makeError("--num-kv-heads " + std::to_string(*options.numKvHeads) +
                       ": the checkpoint records num_kv_heads " +
                       std::to_string(*source.numKvHeads));
    source.numKvHeads = options.numKvHeads;
  }
  Expected<LegacyCategories> target = getTargetCategories(source, tp);
  if (!target)
    return target.takeError();
  // A vocabulary whose shards carry no padding (AutoTP's) was split by the
  // row rule, as any column-parallel weight; a padded one (Megatron's) by
  // the vocabulary rule.
  LegacyCategories sourceRows = source, targetRows = *target;
  sourceRows.vocabulary.clear();
  targetRows.vocabulary.clear();
  auto recordedAtTarget = source.mapsAtDegree.find(tp);
  for (const DeepSpeedParam &param : params) {
    // Where the checkpoint was retargeted from this degree, its shards
    // were where the recorded map says (ucp_tp_maps).
    if (recordedAtTarget != source.mapsAtDegree.end()) {
      auto recorded = recordedAtTarget->second.find(param.name);
      if (recorded != recordedAtTarget->second.end()) {
        if (Error error = takeMap(param, recorded->second,
                                  "parameter '" + param.name +
                                      "': ucp_tp_maps records it at TP " +
                                      std::to_string(tp)))
          return error;
        continue;
      }
    }
    // A recorded map says where the shards are at the source's degree and
    // nothing of another's but TP 1's, where every tensor is whole.
    if (source.affineMaps.count(param.name)) {
      if (tp != 1)
        return makeError("parameter '" + param.name +
                         "': its TP map is the affine_map the checkpoint "
                         "carries, at TP " +
                         std::to_string(sourceTp) +
                         ", and no rule gives it at TP " + std::to_string(tp) +
                         ": give the target's maps with --target-map");
      Expected<ParamMap> whole =
          buildReplicatedLayout(param.name, param.tpMap.logicalShape, 1);
      if (!whole)
        return whole.takeError();
      tpShapes.push_back({whole->logicalShape});
      tpMaps.push_back(std::move(*whole));
      continue;
    }
    Expected<UniversalMerge> merge = classifyUniversalMerge(param.name, source);
    if (!merge)
      return merge.takeError();
    bool split = merge->catDim || merge->subParams || merge->subParamCount;
    bool needsKvHeads = split && !merge->vocabulary && !source.numKvHeads &&
                        maySplitByKvHeads(param.name);
    if (needsKvHeads && tp > 1)
      return makeError(
          "parameter '" + param.name + "': at TP " + std::to_string(tp) +
          " DeepSpeed may split it by whole kv heads, and the checkpoint "
          "does not record num_kv_heads: pass --num-kv-heads");
    bool rows = merge->vocabulary && !param.tpMap.originalVocabSize;
    LegacyParam whole{param.name, param.tpMap.logicalShape, {}};
    // The rules must give the source's own shards first.
    Expected<ParamMap> again =
        lowerLegacyParam(whole, rows ? sourceRows : source, sourceTp);
    Expected<std::vector<Extents>> shapes =
        again ? getShardShapes(*again) : again.takeError();
    if (!shapes)
      return shapes.takeError();
    if (*shapes != param.tpShapes)
      return makeError("parameter '" + param.name + "': its TP shards " +
                       formatShapes(param.tpShapes) + " are not the " +
                       formatShapes(*shapes) +
                       " that universal_checkpoint_info's rules give at TP " +
                       std::to_string(sourceTp) +
                       ", so they cannot be carried to another degree" +
                       (needsKvHeads
                            ? " (if DeepSpeed split it by kv heads, pass "
                              "--num-kv-heads)"
                            : ""));
    Expected<ParamMap> map =
        lowerLegacyParam(whole, rows ? targetRows : *target, tp);
    Expected<std::vector<Extents>> targetShapes =
        map ? getShardShapes(*map) : map.takeError();
    if (!targetShapes)
      return targetShapes.takeError();
    tpMaps.push_back(std::move(*map));
    tpShapes.push_back(std::move(*targetShapes));
  }
  targetCategories = std::move(*target);
  return Error::success();
}

/// sub_param_shard_widths as `categories` hold them.
static PickleRef buildShardWidths(PickleBuilder &b,
                                  const LegacyCategories &categories,
                                  bool ordered) {
  std::vector<std::pair<PickleRef, PickleRef>> items;
  for (const auto &[key, perSub] : categories.subParamShardWidths) {
    std::vector<PickleRef> subs;
    for (const Extents &sizes : perSub) {
      std::vector<PickleRef> ranks;
      for (int64_t size : sizes)
        ranks.push_back(b.integer(size));
      subs.push_back(b.list(ranks));
    }
    items.push_back({b.string(key), b.list(subs)});
  }
  return b.dict(items, ordered);
}

void Retargeter::replaceTensorParallel(
    const PickleCursor &root, int64_t t, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced) const {
  if (std::optional<PickleCursor> shapes = root.find("param_shapes"))
    replaced[shapes->getRef()] = buildParamShapes(b, t);
  static const char *const kDimensions[] = {"checkpoint_parallel_dimensions",
                                            "tp_degree"};
  static const char *const kAutoTp[] = {"ds_config", "tensor_parallel",
                                        "autotp_size"};
  for (llvm::ArrayRef<const char *> keys :
       {llvm::ArrayRef(kDimensions), llvm::ArrayRef(kAutoTp)})
    replacePath(root, keys, b.integer(tp), replaced);
  // universal_checkpoint_info: the sub-parameter widths at the new degree
  // (none where explicit maps replace the rules) and the maps given; a
  // recorded affine_map no longer holds.
  std::optional<PickleCursor> info = root.find("universal_checkpoint_info");
  if (!info || !info->is(PickleValue::Dict))
    return;
  const PickleDocument &from = root.getDocument();
  const std::vector<PickleRef> &old = info->get().items;
  std::vector<std::pair<PickleRef, PickleRef>> items;
  for (size_t i = 0; i + 1 < old.size(); i += 2) {
    llvm::StringRef key = from.get(old[i]).text;
    if (key == "affine_map" || key == "ucp_tp_maps" || key == "ucp_tp_affine")
      continue;
    PickleRef value = b.copy(from, old[i + 1], replaced);
    if (key == "sub_param_shard_widths") {
      if (!targetCategories)
        continue;
      value = buildShardWidths(b, *targetCategories,
                               from.get(old[i + 1]).module == "collections");
    }
    items.push_back({b.copy(from, old[i], replaced), value});
  }
  if (std::optional<PickleRef> map = buildAffineMap(b))
    items.push_back({b.string("affine_map"), *map});
  if (std::optional<PickleRef> record = buildRecordedMaps(b))
    items.push_back({b.string("ucp_tp_maps"), *record});
  if (std::optional<PickleRef> names = buildRecordedAffineNames(b))
    items.push_back({b.string("ucp_tp_affine"), *names});
  replaced[info->getRef()] = b.dict(items, info->get().module == "collections");
}

//===- RetargetPipeline.cpp - A pipeline run at other stages --------------===//
//
// A PipelineModule's parameters are numbered by layer, so the stages
// holding each one at the target follow from the layers each target stage
// runs (its partition: DeepSpeed's PipelineModule.parts), and a tied
// module's from the layers that use it. Neither is in the checkpoint (a
// stage records only the names it holds, and no layer file says which
// layers use a tied module), so at another stage count above 1 both are
// given; one stage runs every layer. Each target stage lists its
// parameters as its PipelineModule does: the tied modules first, in the
// order of the layers first using them, then each layer's by layer, a
// layer's own in the source's order. A parameter's map is its TP map on
// each target stage holding it; the layer files, one per layer, are the
// same at every stage count (RetargetLayerFiles.cpp).
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"
#include "ucp/DeepSpeed/PipelineLayout.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"


using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

Error Retargeter::checkPipeline() const {
  if (pp < 1 || pp > kMaxWorldSize)
    return makeError("--pp " + std::to_string(pp) + ": expected 1 to " +
                     std::to_string(kMaxWorldSize));
  if (!checkpoint.isPipeline()) {
    if (pp != 1 || !options.ppPartition.empty() ||
        !options.ppTiedLayers.empty())
      return makeError(checkpoint.getFolder() +
                       ": not a pipeline (PipelineModule) checkpoint, whose "
                       "parameters would be numbered by layer: --pp, "
                       "--pp-partition and --pp-tied do not apply");
    return Error::success();
  }
  // Every stage holds a parameter of each group: bounded before a map of
  // pp ranks is built.
  if (pp > int64_t(checkpoint.getParams().size()))
    return makeError("--pp " + std::to_string(pp) + ": more stages than the " +
                     std::to_string(checkpoint.getParams().size()) +
                     " parameters of the checkpoint, and every stage holds "
                     "some of each optimizer group");
  if (tp != 1)
    return makeError("--tp " + std::to_string(tp) +
                     ": a pipeline with tensor parallelism is not written: "
                     "no such checkpoint of DeepSpeed's has been checked "
                     "against its layout");
  if (isZero3Target())
    return makeError("--zero-stage 3: DeepSpeed runs no pipeline with ZeRO-3");
  if (!options.ppPartition.empty() &&
      (options.ppPartition.size() != size_t(pp) + 1 ||
       options.ppPartition.front() != 0 ||
       !llvm::is_sorted(options.ppPartition, std::less_equal<int64_t>())))
    return makeError("--pp-partition: expected " + std::to_string(pp + 1) +
                     " increasing boundaries from 0 for " + std::to_string(pp) +
                     " stages");
  if (changesStages() && pp > 1 && options.ppPartition.empty())
    return makeError(
        "--pp " + std::to_string(pp) + ": which layers each of " +
        std::to_string(pp) +
        " stages runs is not in the checkpoint; give --pp-partition "
        "(DeepSpeed's PipelineModule.parts as B0,...,B" +
        std::to_string(pp) + ", or uniform:L for partition_method "
                             "'uniform' over L layers)");
  // A Universal folder's tied modules are written in a layer file.
  if (!changesStages() && !options.ppTiedLayers.empty() &&
      !checkpoint.isUniversal())
    return makeError("--pp-tied: used only where the stages change (another "
                     "--pp, or --pp-partition) or layer files are made, and "
                     "the stages stay the source's");
  for (const auto &[key, layers] : options.ppTiedLayers)
    if (llvm::none_of(checkpoint.getParams(), [&](const DeepSpeedParam &p) {
          return getTiedKey(p.name) == llvm::StringRef(key);
        }))
      return makeError("--pp-tied " + key +
                       ": no parameter of the checkpoint is of tied module '" +
                       key + "' (tied_modules." + key + ".*)");
  return Error::success();
}

/// The stage running `layer` among `parts` (one stage where none are
/// given).
static std::optional<int64_t> getStage(llvm::ArrayRef<int64_t> parts,
                                       int64_t layer) {
  return parts.empty() ? std::optional<int64_t>(0)
                       : getStageOfLayer(parts, layer);
}

Expected<std::vector<int64_t>> Retargeter::getTargetStages(size_t p) const {
  const DeepSpeedParam &param = checkpoint.getParams()[p];
  llvm::ArrayRef<int64_t> parts = options.ppPartition;
  std::string range =
      parts.empty() ? "" : " [0, " + std::to_string(parts.back()) + ")";
  if (std::optional<llvm::StringRef> key = getTiedKey(param.name)) {
    auto found = options.ppTiedLayers.find(key->str());
    if (found == options.ppTiedLayers.end() && pp == 1)
      return std::vector<int64_t>{0};
    if (found == options.ppTiedLayers.end())
      return makeError("parameter '" + param.name + "' is of tied module '" +
                       *key +
                       "', held by every stage running a layer that uses it, "
                       "and which layers do is not in the checkpoint: give "
                       "--pp-tied " +
                       *key +
                       "=L1,L2,... (as the embedding's layer and the head's)");
    std::vector<int64_t> stages;
    for (int64_t layer : found->second) {
      std::optional<int64_t> stage = getStage(parts, layer);
      if (!stage)
        return makeError("--pp-tied " + found->first + ": layer " +
                         std::to_string(layer) +
                         " is not one of --pp-partition's layers" + range);
      stages.push_back(*stage);
    }
    llvm::sort(stages);
    stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
    return stages;
  }
  std::optional<std::pair<int64_t, std::string>> split =
      splitLayerName(param.name);
  if (!split)
    return makeError("parameter '" + param.name +
                     "' names no layer (<layer>.<name>) and no tied module, "
                     "so no stage is known to hold it");
  std::optional<int64_t> stage = getStage(parts, split->first);
  if (!stage)
    return makeError("parameter '" + param.name + "' is of layer " +
                     std::to_string(split->first) +
                     ", which no stage of --pp-partition runs (layers" +
                     range + ")");
  return std::vector<int64_t>{*stage};
}

void Retargeter::sortStageParams(int64_t stage,
                                 std::vector<size_t> &params) const {
  std::vector<std::string> names;
  for (size_t p : params)
    names.push_back(checkpoint.getParams()[p].name);
  auto firstUse = [&](llvm::StringRef key) {
    // Without the layers given, one stage: the source lists tied modules
    // in the order of first use already.
    auto found = options.ppTiedLayers.find(key.str());
    if (found == options.ppTiedLayers.end())
      return int64_t(0);
    int64_t first = INT64_MAX;
    for (int64_t layer : found->second)
      if (getStage(options.ppPartition, layer) == stage)
        first = std::min(first, layer);
    return first;
  };
  std::vector<size_t> ordered;
  for (size_t i : orderStageParams(names, firstUse))
    ordered.push_back(params[i]);
  params = std::move(ordered);
}

Error Retargeter::planStages() {
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  if (!checkpoint.isPipeline()) {
    stageGroups = {groups};
  } else {
    stageGroups.assign(pp, std::vector<std::vector<size_t>>(groups.size()));
    for (size_t p = 0; p < params.size(); ++p) {
      const DeepSpeedParam &param = params[p];
      std::vector<int64_t> sourceStages;
      for (const Shard &shard : param.tpMap.shards)
        if (sourceStages.empty() || sourceStages.back() != shard.rank / tp)
          sourceStages.push_back(shard.rank / tp);
      Expected<std::vector<int64_t>> stages =
          changesStages() ? getTargetStages(p) : sourceStages;
      if (!stages)
        return stages.takeError();
      Expected<ParamMap> map = placeOnStages(
          getStageMap(param.tpMap, sourceStages.front(), tp), *stages, tp, pp);
      if (!map)
        return map.takeError();
      tpShapes[p].assign(getModelParallelDegree(), {});
      for (const Shard &shard : map->shards)
        tpShapes[p][shard.rank] = shard.shape;
      tpMaps[p] = std::move(*map);
      for (int64_t stage : *stages)
        stageGroups[stage][param.group].push_back(p);
    }
    for (int64_t s = 0; s < pp; ++s)
      for (size_t g = 0; g < groups.size(); ++g) {
        if (changesStages())
          sortStageParams(s, stageGroups[s][g]);
        else // The source's own order.
          stageGroups[s][g] = checkpoint.getStageGroup(s, g);
        if (stageGroups[s][g].empty())
          return makeError(
              "stage " + std::to_string(s) +
              (options.ppPartition.empty()
                   ? std::string()
                   : " (layers [" + std::to_string(options.ppPartition[s]) +
                         ", " + std::to_string(options.ppPartition[s + 1]) +
                         "))") +
              " would hold no parameter of optimizer group " +
              std::to_string(g) +
              ", which the other stages' optimizers have: DeepSpeed's "
              "layout of such a stage is not known");
      }
  }
  stagePositions.assign(stageGroups.size(),
                        std::vector<int64_t>(params.size(), -1));
  for (size_t s = 0; s < stageGroups.size(); ++s)
    for (const std::vector<size_t> &group : stageGroups[s])
      for (auto [i, p] : llvm::enumerate(group))
        stagePositions[s][p] = i;
  return Error::success();
}

PickleRef Retargeter::buildParamShapes(PickleBuilder &b, int64_t m) const {
  std::vector<PickleRef> perGroup;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<std::pair<PickleRef, PickleRef>> items;
    for (size_t p : getGroupParams(g, m))
      items.push_back(
          {b.string(checkpoint.getParams()[p].name), b.size(tpShapes[p][m])});
    perGroup.push_back(b.dict(items, /*ordered=*/true));
  }
  return b.list(perGroup);
}

void Retargeter::replacePipeline(
    const PickleCursor &root, int64_t m, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced) const {
  static const char *const kPpDegree[] = {"checkpoint_parallel_dimensions",
                                          "pp_degree"};
  // BF16_Optimizer's pipeline records none.
  std::optional<PickleCursor> shapes = root.find("param_shapes");
  if (shapes && !shapes->is(PickleValue::None))
    replaced[shapes->getRef()] = buildParamShapes(b, m);
  replacePath(root, kPpDegree, b.integer(pp), replaced);
}

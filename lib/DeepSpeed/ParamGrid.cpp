//===- ParamGrid.cpp - Every parameter over the grid ----------------------===//
//
// A parameter's map over the (DP x MP) grid is made by two cuts, the same
// for every layout: its model-parallel map (the TP map of each pipeline
// stage holding it, placed on that stage's ranks `stage * tp + t`), then
// each model-parallel shard cut into the DP fragments ZeRO placed
// (nestShardMaps). A run without a pipeline is one stage.
//
// Parameter groups are per stage: stage s's model states list its groups,
// and its optimizer files partition them over its DP ranks. A parameter
// two stages list (a tied embedding) is one parameter held twice: its
// copies are replicas in the model-parallel map, and P2 holds them equal.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/DeepSpeed/PipelineLayout.h"
#include "ucp/Layout/NestedLayout.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;

Error DeepSpeedReader::placeGroup(int64_t stage, size_t g,
                                  std::map<std::string, size_t> &byName) {
  // Model-parallel ranks (TP, or EP for experts) x DP (or EDP) ranks.
  bool experts = expertGroups.count(g);
  int64_t outer = getGroupOuterDegree(g), dp = getGroupDpDegree(g);
  // The model-parallel ranks of this stage: its TP ranks, or the EP ranks.
  int64_t first = experts ? 0 : stage * files.tp;
  int64_t count = experts ? outer : files.tp;
  // Every EP rank's expert shapes are those of the first model file.
  auto getShapes = [&](int64_t o) -> const std::vector<GroupParam> & {
    return getModel(experts ? 0 : o).groups[g];
  };
  // Per model-parallel rank of the stage: every parameter's slice on each
  // DP rank.
  std::vector<std::vector<std::vector<FragmentSlice>>> placements;
  for (int64_t o = first; o < first + count; ++o) {
    std::vector<const RankGroup *> ranks;
    std::vector<std::string> paths;
    for (int64_t d = 0; d < dp; ++d) {
      ranks.push_back(&optimizers[d * outer + o].groups[g]);
      paths.push_back(files.optimizerFiles[d * outer + o]);
    }
    Expected<std::vector<std::vector<FragmentSlice>>> placement =
        placeFragments(getShapes(o), ranks, paths, files.zero3);
    if (!placement)
      return placement.takeError();
    placements.push_back(std::move(*placement));
  }
  const std::vector<GroupParam> &listed = getShapes(first);
  for (size_t p = 0; p < listed.size(); ++p) {
    auto [it, added] = byName.try_emplace(listed[p].name, byName.size());
    if (added) {
      DeepSpeedParam &param = checkpoint.params.emplace_back();
      param.name = listed[p].name;
      param.group = g;
      if (experts)
        param.expertLayer = expertLayers[g][p];
      param.tpShapes.resize(outer);
      param.slices.resize(outer * dp);
      paramStages.emplace_back();
    }
    DeepSpeedParam &param = checkpoint.params[it->second];
    std::vector<int64_t> &stages = paramStages[it->second];
    const std::string &path = files.modelFiles[first];
    if (!stages.empty() && stages.back() == stage)
      return makeError(path + ": param_shapes lists '" + param.name +
                       "' twice");
    if (param.group != g)
      return makeError(path + ": param_shapes puts '" + param.name +
                       "' in parameter group " + std::to_string(g) +
                       ", but stage " + std::to_string(stages.front()) +
                       " in group " + std::to_string(param.group) +
                       ": a parameter several stages hold is one parameter "
                       "of one group");
    stages.push_back(stage);
    if (!experts) {
      auto &stageGroups = checkpoint.stageGroups;
      stageGroups.resize(std::max<size_t>(stageGroups.size(), stage + 1));
      stageGroups[stage].resize(std::max(stageGroups[stage].size(), g + 1));
      stageGroups[stage][g].push_back(it->second);
    }
    for (int64_t o = first; o < first + count; ++o) {
      param.tpShapes[o] = getShapes(o)[p].shape;
      for (int64_t d = 0; d < dp; ++d)
        param.slices[d * outer + o] = placements[o - first][p][d];
    }
  }
  return Error::success();
}

Expected<ParamMap> DeepSpeedReader::buildModelParallelMap(
    const DeepSpeedParam &param, llvm::ArrayRef<int64_t> stages) const {
  if (param.expertLayer)
    return buildExpertMap(param.name, *param.expertLayer,
                          param.tpShapes.front());
  std::optional<ParamMap> first;
  for (int64_t stage : stages) {
    Expected<ParamMap> stageMap = buildTpMap(
        param.name,
        llvm::ArrayRef(param.tpShapes).slice(stage * files.tp, files.tp));
    if (!stageMap)
      return stageMap.takeError();
    if (first && !(*stageMap == *first))
      return makeError("parameter '" + param.name + "' is " +
                       formatList(stageMap->logicalShape) + " on stage " +
                       std::to_string(stage) + " but " +
                       formatList(first->logicalShape) + " on stage " +
                       std::to_string(stages.front()) +
                       ": the copies of a tied parameter are one tensor");
    if (!first)
      first = std::move(*stageMap);
  }
  return placeOnStages(*first, stages, files.tp, files.pp);
}

Error DeepSpeedReader::buildParams() {
  std::map<std::string, size_t> byName;
  for (int64_t stage = 0; stage < files.pp; ++stage) {
    const ModelStates &model = getModel(stage * files.tp);
    for (size_t g = 0; g < model.groups.size(); ++g)
      if (Error error = placeGroup(stage, g, byName))
        return error;
  }
  for (auto [param, stages] : llvm::zip(checkpoint.params, paramStages)) {
    Expected<ParamMap> outerMap = buildModelParallelMap(param, stages);
    if (!outerMap)
      return outerMap.takeError();
    int64_t outer = param.tpShapes.size();
    int64_t dp = param.slices.size() / outer;
    // A rank of a stage without the parameter has no shard to cut.
    std::vector<ParamMap> inner(outer,
                                ParamMap{param.name, {}, dp, {}, std::nullopt});
    for (const Shard &shard : outerMap->shards) {
      Extents sizes;
      for (int64_t d = 0; d < dp; ++d)
        sizes.push_back(param.slices[d * outer + shard.rank].count);
      Expected<ParamMap> fragments =
          buildFlatRangeLayout(param.name, param.tpShapes[shard.rank], sizes);
      if (!fragments)
        return fragments.takeError();
      inner[shard.rank] = std::move(*fragments);
    }
    Expected<ParamMap> map = nestShardMaps(*outerMap, inner);
    if (!map)
      return map.takeError();
    param.map = std::move(*map);
    param.tpMap = std::move(*outerMap);
  }
  return Error::success();
}

//===- AutoEpLayout.cpp - AutoEP experts of a DeepSpeed checkpoint --------===//
//
// AutoEP trains each routed expert tensor `<expert_key_prefix>.<w>` of
// `[num_experts, ...]` as EP-local shards: EP rank e holds experts
// `[e * n, (e + 1) * n)` as a `[n, ...]` parameter of the expert group,
// which ZeRO partitions over the rank's expert-data-parallel (EDP) group.
// Ranks are numbered `edp * ep_size + ep` (expert parallelism fastest),
// which is how nestShardMaps numbers an outer map (the experts over EP
// ranks) nested with inner ones (each EP rank's shard over its EDP ranks).
// So an expert parameter is read as every other one, with EP in TP's place.
//
// Everything the files say about the layout is checked against everything
// else: every model file's layers, the rank each file says it is, the
// groups' partition counts, universal_checkpoint_info's copy of the layers
// and its expert patterns, and (ZeRO-1/2) one per-expert file per expert.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/Layout/ExpertPlacement.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;

static bool isSameLayer(const AutoEpLayer &a, const AutoEpLayer &b) {
  return a.moeLayerId == b.moeLayerId && a.modulePath == b.modulePath &&
         a.expertKeyPrefix == b.expertKeyPrefix &&
         a.numExperts == b.numExperts && a.localExperts == b.localExperts &&
         a.epSize == b.epSize;
}

static std::string describeLayer(const AutoEpLayer &layer) {
  return "AutoEP layer " + std::to_string(layer.moeLayerId) + " ('" +
         layer.modulePath + "', " + std::to_string(layer.numExperts) +
         " experts, ep_size " + std::to_string(layer.epSize) + ")";
}

Expected<ParamMap>
ucp::buildAutoEpExpertMap(llvm::StringRef name, const AutoEpLayer &layer,
                          llvm::ArrayRef<int64_t> localShape) {
  Expected<ExpertPlacement> placement = getUniformExpertPlacement(
      layer.numExperts, layer.localExperts, layer.epSize);
  if (!placement)
    return placement.takeError();
  return buildExpertLayout(name, *placement, localShape.drop_front());
}

int64_t DeepSpeedReader::getGroupDpDegree(size_t g) const {
  return expertGroups.count(g) ? files.dp / checkpoint.getAutoEpSize()
                               : files.dp;
}

int64_t DeepSpeedReader::getGroupOuterDegree(size_t g) const {
  return expertGroups.count(g) ? checkpoint.getAutoEpSize() : files.mp;
}

/// Checks what file `path` (of grid rank `rank`) says of the rank that
/// wrote it and of the checkpoint's format.
static Error checkRankFields(const std::string &path,
                             const AutoEpRecord &record, int64_t rank,
                             int64_t dp, bool zero3) {
  const AutoEpLayer &layer = record.layer;
  llvm::StringRef expected = zero3 ? "zero3_partitioned" : "per_expert_files";
  if (zero3 && !record.format)
    return makeError(path + ": " + describeLayer(layer) +
                     " records no checkpoint_format: a ZeRO-3 AutoEP "
                     "checkpoint must be partition-native (zero3_partitioned)");
  if (record.format && *record.format != expected)
    return makeError(path + ": " + describeLayer(layer) +
                     " is saved as checkpoint_format '" + *record.format +
                     "', not the '" + expected + "' of a ZeRO-" +
                     (zero3 ? "3" : "1/2") + " checkpoint");
  int64_t ep = layer.epSize;
  for (auto [what, value, want] :
       {std::tuple{"ep_rank", record.epRank, rank % ep},
        {"expert_data_parallel_rank", record.edpRank, rank / ep},
        {"expert_data_parallel_world_size", record.edpWorldSize, dp / ep}})
    if (value && *value != want)
      return makeError(path + ": " + describeLayer(layer) + " records " + what +
                       " " + std::to_string(*value) + ", but grid rank " +
                       std::to_string(rank) + " of " + std::to_string(dp) +
                       " ranks at ep_size " + std::to_string(ep) + " has " +
                       std::to_string(want));
  return Error::success();
}

/// Refuses per-expert files without AutoEP metadata, in DeepSpeed-MoE's
/// or AutoEP's names.
static Error refuseExpertFilesWithoutLayers(const std::string &path) {
  Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(path);
  if (!file)
    return file.takeError();
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      PickleCursor((*file)->getDocument()).getStringItems();
  if (items && llvm::any_of(*items, [](const auto &item) {
        return llvm::StringRef(item.first).contains("deepspeed_moe");
      }))
    return makeError(path +
                     ": a native DeepSpeed-MoE expert file (deepspeed_moe "
                     "parameter names), and the model states record no "
                     "AutoEP layers: this is not an AutoEP checkpoint, so "
                     "no AutoEP merge is done, and where DeepSpeed-MoE "
                     "put its experts is not recorded, so it is not "
                     "converted");
  return makeError(path +
                   ": an AutoEP expert file, but the model states record "
                   "no ds_autoep_layers (nor autoep_layers): which EP "
                   "rank holds which expert is not known");
}

Error DeepSpeedReader::checkExpertFiles() {
  const std::vector<AutoEpLayer> &layers = checkpoint.autoEpLayers;
  if (layers.empty()) {
    if (!files.expertFiles.empty())
      return refuseExpertFilesWithoutLayers(
          files.expertFiles.begin()->second.front());
    return Error::success();
  }
  if (files.zero3) {
    if (!files.expertFiles.empty())
      return makeError(files.expertFiles.begin()->second.front() +
                       ": a per-expert file in a ZeRO-3 AutoEP checkpoint, "
                       "whose experts are partition-native: the folder mixes "
                       "two runs");
    return Error::success();
  }
  std::map<std::pair<int64_t, int64_t>, std::vector<std::string>> unused =
      files.expertFiles;
  for (const AutoEpLayer &layer : layers) {
    std::vector<std::string> &mine = checkpoint.expertFiles.emplace_back();
    for (int64_t g = 0; g < layer.numExperts; ++g) {
      auto found = unused.find({layer.moeLayerId, g});
      if (found == unused.end())
        return makeError(
            checkpoint.folder + "/layer_" + std::to_string(layer.moeLayerId) +
            "_expert_" + std::to_string(g) +
            "_mp_rank_00_model_states.pt is missing: " + describeLayer(layer) +
            " saves one file per expert");
      std::vector<std::string> &paths = found->second;
      if (paths.size() > 1) {
        llvm::sort(paths);
        return makeError(paths[1] + ": a second mp_rank file for expert " +
                         std::to_string(g) + " of " + describeLayer(layer) +
                         " (beside " + paths[0] +
                         "): AutoEP with tensor parallelism is not converted");
      }
      mine.push_back(paths.front());
      unused.erase(found);
    }
  }
  if (!unused.empty())
    return makeError(unused.begin()->second.front() +
                     ": an expert file of no expert of the AutoEP layers the "
                     "model states record: the folder mixes two runs");
  return Error::success();
}

/// The expert patterns of universal_checkpoint_info, checked to name
/// experts and nothing else (by findExpertParams).
static Expected<std::vector<std::string>>
readExpertPatterns(const std::optional<llvm::json::Value> &info) {
  std::vector<std::string> patterns;
  const llvm::json::Object *object = info ? info->getAsObject() : nullptr;
  const llvm::json::Array *list =
      object ? object->getArray("expert_parameter_patterns") : nullptr;
  if (!list)
    return patterns;
  for (const llvm::json::Value &value : *list) {
    std::optional<llvm::StringRef> text = value.getAsString();
    std::string why;
    if (!text || !llvm::Regex(*text).isValid(why))
      return makeError("universal_checkpoint_info: expert_parameter_patterns: "
                       "not a regular expression" +
                       (why.empty() ? "" : ": " + why));
    patterns.push_back(text->str());
  }
  return patterns;
}

Error DeepSpeedReader::findExpertParams() {
  const std::vector<AutoEpLayer> &layers = checkpoint.autoEpLayers;
  const std::string &path = files.modelFiles.front();
  Expected<std::vector<std::string>> patterns =
      readExpertPatterns(getModel(0).universalInfo);
  if (!patterns)
    return makeError(path + ": " + llvm::toString(patterns.takeError()));
  auto matches = [&](llvm::StringRef name) {
    return llvm::any_of(*patterns, [&](const std::string &pattern) {
      return llvm::Regex(pattern).match(name);
    });
  };
  std::vector<bool> found(layers.size(), false);
  for (const std::vector<GroupParam> &group : getModel(0).groups) {
    size_t g = expertLayers.size();
    std::vector<std::optional<size_t>> &mine = expertLayers.emplace_back();
    for (const GroupParam &param : group) {
      std::optional<size_t> layer;
      for (auto [index, candidate] : llvm::enumerate(layers)) {
        llvm::StringRef rest = param.name;
        if (rest.consume_front(candidate.expertKeyPrefix + ".") &&
            !rest.empty() && !rest.contains('.'))
          layer = index;
      }
      if (!patterns->empty() && matches(param.name) != layer.has_value())
        return makeError(path + ": parameter '" + param.name + "' " +
                         (layer ? "is an expert of " +
                                      describeLayer(layers[*layer]) +
                                      " but matches no"
                                : "is no AutoEP expert but matches an") +
                         " expert_parameter_patterns entry of "
                         "universal_checkpoint_info");
      if (layer) {
        const AutoEpLayer &owner = layers[*layer];
        if (param.shape.empty() || param.shape[0] != owner.localExperts)
          return makeError(path + ": expert parameter '" + param.name +
                           "' has the EP-local shape " +
                           formatList(param.shape) + ", not " +
                           std::to_string(owner.localExperts) +
                           " local experts of " + describeLayer(owner));
        found[*layer] = true;
        expertGroups.insert(g);
      }
      if (!mine.empty() && mine.back().has_value() != layer.has_value())
        return makeError(path + ": parameter group " + std::to_string(g) +
                         " mixes AutoEP experts and dense parameters ('" +
                         param.name + "')");
      mine.push_back(layer);
    }
  }
  for (auto [layer, seen] : llvm::zip(layers, found))
    if (!seen)
      return makeError(path + ": " + describeLayer(layer) +
                       " has no trainable expert parameter under '" +
                       layer.expertKeyPrefix +
                       "' (frozen experts are not converted)");
  return Error::success();
}

/// Checks universal_checkpoint_info's copy of the layers against theirs.
static Error checkInfoLayers(const std::string &path,
                             const std::optional<llvm::json::Value> &info,
                             llvm::ArrayRef<AutoEpLayer> layers) {
  const llvm::json::Object *object = info ? info->getAsObject() : nullptr;
  const llvm::json::Array *list =
      object ? object->getArray("ds_autoep_layers") : nullptr;
  if (!list)
    return Error::success();
  bool same = list->size() == layers.size();
  for (size_t i = 0; same && i < layers.size(); ++i) {
    const llvm::json::Object *entry = (*list)[i].getAsObject();
    same = entry && entry->getInteger("moe_layer_id") == layers[i].moeLayerId &&
           entry->getString("expert_key_prefix") ==
               llvm::StringRef(layers[i].expertKeyPrefix) &&
           entry->getInteger("num_experts") == layers[i].numExperts &&
           entry->getInteger("ep_size") == layers[i].epSize;
  }
  if (!same)
    return makeError(path + ": universal_checkpoint_info's ds_autoep_layers "
                            "differ from the file's own");
  return Error::success();
}

Error DeepSpeedReader::readExpertParallelLayout() {
  const std::optional<AutoEpStates> &first = getModel(0).autoEp;
  const std::string &path = files.modelFiles.front();
  if (!first) {
    const llvm::json::Object *info =
        getModel(0).universalInfo ? getModel(0).universalInfo->getAsObject()
                                  : nullptr;
    if (info && (info->get("ds_autoep_layers") ||
                 info->get("expert_parameter_patterns")))
      return makeError(path + ": universal_checkpoint_info describes AutoEP "
                              "experts, but the file records no "
                              "ds_autoep_layers (nor autoep_layers)");
    return checkExpertFiles();
  }
  std::vector<AutoEpLayer> layers;
  for (const AutoEpRecord &record : first->layers) {
    if (record.layer.moeLayerId != static_cast<int64_t>(layers.size()))
      return makeError(path + ": " + describeLayer(record.layer) +
                       " is listed in place " + std::to_string(layers.size()));
    if (record.layer.epSize != first->layers.front().layer.epSize)
      return makeError(path + ": " + describeLayer(record.layer) +
                       " has another ep_size than AutoEP layer 0");
    layers.push_back(record.layer);
  }
  int64_t ep = layers.front().epSize;
  if (files.mp != 1)
    return makeError(path + ": AutoEP with tensor or pipeline parallelism "
                            "(mp_world_size " +
                     std::to_string(files.mp) + ") is not converted");
  // A Universal folder is one rank of whole tensors: its layers record
  // the source's grid, which its files no longer have.
  if (!checkpoint.universal && files.dp % ep != 0)
    return makeError(path + ": autoep_size " + std::to_string(ep) +
                     " does not divide the " + std::to_string(files.dp) +
                     " DP ranks");
  if (first->numExperts) {
    Extents counts;
    for (const AutoEpLayer &layer : layers)
      counts.push_back(layer.numExperts);
    if (*first->numExperts != counts)
      return makeError(
          path + ": num_experts " + formatList(*first->numExperts) +
          " differs from its AutoEP layers' " + formatList(counts));
  }
  for (auto [index, model] : llvm::enumerate(models)) {
    const std::string &file = files.modelFiles[index];
    if (!model.autoEp || model.autoEp->layers.size() != layers.size() ||
        !llvm::all_of(llvm::zip(model.autoEp->layers, layers), [](auto pair) {
          return isSameLayer(std::get<0>(pair).layer, std::get<1>(pair));
        }))
      return makeError(file + ": its AutoEP layers differ from " + path + "'s");
    for (const AutoEpRecord &record : model.autoEp->layers)
      if (Error error =
              checkpoint.universal
                  ? Error::success()
                  : checkRankFields(file, record, index, files.dp, files.zero3))
        return error;
    if (Error error = checkInfoLayers(file, model.universalInfo, layers))
      return error;
  }
  checkpoint.autoEpLayers = std::move(layers);
  // A Universal folder holds the experts' whole tensors instead.
  if (!checkpoint.universal)
    if (Error error = checkExpertFiles())
      return error;
  return findExpertParams();
}

//===- LegacyDocument.cpp - Legacy checkpoint metadata in JSON ------------===//

#include "ucp/Formats/Json/LegacyDocument.h"
#include "ucp/Formats/Json/JsonReading.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Map/Invariants.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

namespace {

Expected<std::vector<std::string>> getStrings(const json::Value &value,
                                              const JsonPath &path) {
  Expected<const json::Array *> array = getArray(value, path);
  if (!array)
    return array.takeError();
  std::vector<std::string> strings;
  for (auto [i, element] : llvm::enumerate(**array)) {
    std::optional<StringRef> text = element.getAsString();
    if (!text)
      return path.index(i).error("expected a string, got " +
                                 getKindName(element));
    strings.push_back(text->str());
  }
  return strings;
}

Expected<std::vector<Extents>> getIntegerLists(const json::Value &value,
                                               const JsonPath &path) {
  Expected<const json::Array *> array = getArray(value, path);
  if (!array)
    return array.takeError();
  std::vector<Extents> lists;
  for (auto [i, element] : llvm::enumerate(**array)) {
    Expected<Extents> list = getIntegers(element, path.index(i));
    if (!list)
      return list.takeError();
    lists.push_back(std::move(*list));
  }
  return lists;
}

/// Reads the optional `key` of `object` with `read` into `out`.
template <typename T, typename ReadFn>
Error readOptional(const json::Object &object, StringRef key,
                   const JsonPath &path, std::optional<T> &out, ReadFn read) {
  const json::Value *value = object.get(key);
  if (!value)
    return Error::success();
  Expected<T> result = read(*value, path.field(key));
  if (!result)
    return result.takeError();
  out = std::move(*result);
  return Error::success();
}

/// Every key of UNIVERSAL_CHECKPOINT_INFO that DeepSpeed writes or its
/// converter reads, and the two of DeepSpeed's split rule this reader takes
/// beside them. Any other key is refused: a misspelt category would leave
/// its parameters to a later branch of the chain, split another way.
constexpr StringRef kInfoKeys[] = {
    "universal_checkpoint_version",
    "tp_replicated_parameter_patterns",
    "pipeline_replicated_parameter_patterns",
    "parameter_to_average_patterns",
    "parameter_with_2_sub_params_cat_dim_0",
    "parameter_with_sub_params",
    "parameter_with_row_parallelism_patterns",
    "vocabulary_parameter_patterns",
    "original_vocab_size",
    "sub_param_shard_widths",
    "autotp_unsupported_parameter_patterns",
    "expert_parameter_patterns",
    "ds_autoep_layers",
    "autoep_layers",
    "affine_map",
    "num_kv_heads",
    "tp_grain_size",
    "ucp_tp_maps",
    "ucp_tp_affine",
};

/// Refuses what the info holds that the lowering cannot honour and must not
/// ignore: expert-parallel layouts.
Error checkUnsupportedInfo(const json::Object &info, const JsonPath &path) {
  for (StringRef key :
       {"expert_parameter_patterns", "ds_autoep_layers", "autoep_layers"})
    if (info.get(key))
      return path.field(key).error(
          "expert-parallel (AutoEP) metadata is not lowered by "
          "--import-legacy; its expert tensors would be split as plain TP "
          "weights");
  return Error::success();
}

/// Reads ucp_tp_affine, {"DEGREE": [name, ...], ...}: the names of the
/// maps recorded at DEGREE that were that run's affine_map.
Error readAffineNames(const json::Value &value, const JsonPath &path,
                      LegacyCategories &categories) {
  const json::Object *degrees = value.getAsObject();
  if (!degrees)
    return path.error("expected an object of name lists by TP degree, got " +
                      getKindName(value));
  for (const auto &[key, names] : *degrees) {
    JsonPath at = path.field(key);
    int64_t degree = 0;
    if (StringRef(key).getAsInteger(10, degree) || degree < 2)
      return at.error("expected a TP degree of at least 2 as the key");
    const json::Array *list = names.getAsArray();
    if (!list)
      return at.error("expected a list of parameter names, got " +
                      getKindName(names));
    for (auto [i, name] : llvm::enumerate(*list)) {
      std::optional<StringRef> text = name.getAsString();
      if (!text)
        return at.index(i).error("expected a parameter name, got " +
                                 getKindName(name));
      categories.affineAtDegree[degree].insert(text->str());
    }
  }
  return Error::success();
}

/// Reads ucp_tp_maps, {"DEGREE": map document, ...}: each document's maps
/// over DEGREE ranks, DEGREE at least 2 (at TP 1 every tensor is whole).
Error readMapsAtDegree(const json::Value &value, const JsonPath &path,
                       LegacyCategories &categories) {
  const json::Object *degrees = value.getAsObject();
  if (!degrees)
    return path.error("expected an object of map documents by TP degree, "
                      "got " + getKindName(value));
  for (const auto &[key, document] : *degrees) {
    JsonPath at = path.field(key);
    int64_t degree = 0;
    if (StringRef(key).getAsInteger(10, degree) || degree < 2)
      return at.error("expected a TP degree of at least 2 as the key");
    Expected<std::vector<ParamMap>> maps = readMapDocument(document, at);
    if (!maps)
      return maps.takeError();
    for (ParamMap &map : *maps) {
      if (map.worldSize != degree)
        return at.error("parameter '" + map.name + "': a map over " +
                        std::to_string(map.worldSize) +
                        " ranks recorded for TP " + std::to_string(degree));
      categories.mapsAtDegree[degree][map.name] = std::move(map);
    }
  }
  return Error::success();
}

Error readCategories(const json::Object &info, const JsonPath &path,
                     LegacyCategories &categories) {
  if (Error error = checkKeys(info, kInfoKeys, path))
    return error;
  if (Error error = checkUnsupportedInfo(info, path))
    return error;
  std::pair<StringRef, std::vector<std::string> *> lists[] = {
      {"tp_replicated_parameter_patterns", &categories.replicated},
      {"parameter_to_average_patterns", &categories.average},
      {"parameter_with_2_sub_params_cat_dim_0",
       &categories.twoSubParamsCatDim0},
      {"parameter_with_row_parallelism_patterns", &categories.rowParallel},
      {"vocabulary_parameter_patterns", &categories.vocabulary},
  };
  for (auto [key, list] : lists) {
    if (const json::Value *value = info.get(key)) {
      Expected<std::vector<std::string>> strings =
          getStrings(*value, path.field(key));
      if (!strings)
        return strings.takeError();
      *list = std::move(*strings);
    }
  }

  if (const json::Value *value = info.get("parameter_with_sub_params")) {
    JsonPath subsPath = path.field("parameter_with_sub_params");
    Expected<const json::Array *> entries = getArray(*value, subsPath);
    if (!entries)
      return entries.takeError();
    for (auto [i, entry] : llvm::enumerate(**entries)) {
      JsonPath entryPath = subsPath.index(i);
      Expected<const json::Object *> object = getObjectWithKeys(
          entry, {"patterns", "shape", "partition_dim"}, entryPath);
      if (!object)
        return object.takeError();
      SubParamCategory &category = categories.subParams.emplace_back();
      Expected<const json::Value *> patterns =
          getKey(**object, "patterns", entryPath);
      if (!patterns)
        return patterns.takeError();
      Expected<std::vector<std::string>> strings =
          getStrings(**patterns, entryPath.field("patterns"));
      if (!strings)
        return strings.takeError();
      category.patterns = std::move(*strings);
      Expected<int64_t> dim =
          getIntegerAt(**object, "partition_dim", entryPath);
      if (!dim)
        return dim.takeError();
      category.partitionDim = *dim;
      JsonPath shapePath = entryPath.field("shape");
      Expected<const json::Array *> shape =
          getArrayAt(**object, "shape", entryPath);
      if (!shape)
        return shape.takeError();
      if (*dim < 0 || *dim >= static_cast<int64_t>((*shape)->size()))
        return entryPath.field("partition_dim")
            .error("partition_dim " + std::to_string(*dim) +
                   " is not a dimension of the shape");
      Expected<Extents> sizes =
          getIntegers((**shape)[*dim], shapePath.index(*dim));
      if (!sizes)
        return sizes.takeError();
      category.subSizes = std::move(*sizes);
    }
  }

  if (const json::Value *value = info.get("sub_param_shard_widths")) {
    JsonPath widthsPath = path.field("sub_param_shard_widths");
    Expected<const json::Object *> object = getObject(*value, widthsPath);
    if (!object)
      return object.takeError();
    for (const auto &entry : **object) {
      Expected<std::vector<Extents>> widths =
          getIntegerLists(entry.second, widthsPath.field(entry.first));
      if (!widths)
        return widths.takeError();
      categories.subParamShardWidths[entry.first.str()] = std::move(*widths);
    }
  }
  if (const json::Value *value =
          info.get("autotp_unsupported_parameter_patterns")) {
    JsonPath unsupportedPath =
        path.field("autotp_unsupported_parameter_patterns");
    Expected<const json::Object *> object = getObject(*value, unsupportedPath);
    if (!object)
      return object.takeError();
    for (const auto &entry : **object) {
      std::optional<StringRef> reason = entry.second.getAsString();
      if (!reason)
        return unsupportedPath.field(entry.first)
            .error("expected the reason, a string, got " +
                   getKindName(entry.second));
      categories.unsupported[entry.first.str()] = reason->str();
    }
  }
  if (Error error = readOptional(info, "original_vocab_size", path,
                                 categories.originalVocabSize, getInteger))
    return error;
  if (Error error = readOptional(info, "num_kv_heads", path,
                                 categories.numKvHeads, getInteger))
    return error;
  std::optional<int64_t> grain;
  if (Error error =
          readOptional(info, "tp_grain_size", path, grain, getInteger))
    return error;
  categories.grainSize = grain.value_or(1);
  if (const json::Value *map = info.get("affine_map")) {
    Expected<std::vector<ParamMap>> maps =
        readMapDocument(*map, path.field("affine_map"));
    if (!maps)
      return maps.takeError();
    for (ParamMap &map : *maps)
      categories.affineMaps[map.name] = std::move(map);
  }
  if (const json::Value *recorded = info.get("ucp_tp_maps"))
    if (Error error = readMapsAtDegree(*recorded, path.field("ucp_tp_maps"),
                                       categories))
      return error;
  if (const json::Value *recorded = info.get("ucp_tp_affine"))
    if (Error error = readAffineNames(*recorded, path.field("ucp_tp_affine"),
                                      categories))
      return error;
  if (const json::Value *version = info.get("universal_checkpoint_version"))
    if (!version->getAsNumber())
      return path.field("universal_checkpoint_version")
          .error("expected a number, got " + getKindName(*version));
  return Error::success();
}

Expected<LegacyParam> readParam(StringRef name, const json::Value &value,
                                const JsonPath &path) {
  Expected<const json::Object *> object = getObjectWithKeys(
      value,
      {"shape", "replicated", "partition_dim", "partition_sizes",
       "logical_shape", "sub_param_sizes", "sub_param_shard_widths"},
      path);
  if (!object)
    return object.takeError();
  LegacyParam param;
  param.name = name.str();
  Expected<Extents> shape = getIntegersAt(**object, "shape", path);
  if (!shape)
    return shape.takeError();
  param.shape = std::move(*shape);
  AutoTpMeta &meta = param.meta;
  if (const json::Value *replicated = (*object)->get("replicated")) {
    std::optional<bool> flag = replicated->getAsBoolean();
    if (!flag)
      return path.field("replicated")
          .error("expected a boolean, got " + getKindName(*replicated));
    meta.replicated = *flag;
  }
  if (Error error = readOptional(**object, "partition_dim", path,
                                 meta.partitionDim, getInteger))
    return std::move(error);
  if (Error error = readOptional(**object, "partition_sizes", path,
                                 meta.partitionSizes, getIntegers))
    return std::move(error);
  if (Error error = readOptional(**object, "logical_shape", path,
                                 meta.logicalShape, getIntegers))
    return std::move(error);
  if (Error error = readOptional(**object, "sub_param_sizes", path,
                                 meta.subParamSizes, getIntegers))
    return std::move(error);
  if (Error error = readOptional(**object, "sub_param_shard_widths", path,
                                 meta.subParamShardWidths, getIntegerLists))
    return std::move(error);
  return param;
}

} // namespace

Expected<LegacyCategories> ucp::parseLegacyCategories(const json::Value &info) {
  JsonPath path;
  Expected<const json::Object *> object = getObject(info, path);
  if (!object)
    return object.takeError();
  LegacyCategories categories;
  if (Error error = readCategories(**object, path, categories))
    return std::move(error);
  return categories;
}

Expected<LegacyDocument> ucp::parseLegacyDocument(StringRef text) {
  Expected<json::Value> root = parseJson(text);
  if (!root)
    return root.takeError();
  JsonPath path;
  Expected<const json::Object *> object = getObject(*root, path);
  if (!object)
    return object.takeError();
  if (Error error = checkKeys(
          **object, {"tp_degree", "universal_checkpoint_info", "params"}, path))
    return std::move(error);
  LegacyDocument document;
  Expected<int64_t> tp = getIntegerAt(**object, "tp_degree", path);
  if (!tp)
    return tp.takeError();
  if (std::string error = checkWorldSize(*tp, "tp_degree"); !error.empty())
    return path.field("tp_degree").error(error);
  document.tp = *tp;
  if (const json::Value *info = (*object)->get("universal_checkpoint_info")) {
    JsonPath infoPath = path.field("universal_checkpoint_info");
    Expected<const json::Object *> infoObject = getObject(*info, infoPath);
    if (!infoObject)
      return infoObject.takeError();
    if (Error error =
            readCategories(**infoObject, infoPath, document.categories))
      return std::move(error);
  }
  JsonPath paramsPath = path.field("params");
  Expected<const json::Object *> params = getObjectAt(**object, "params", path);
  if (!params)
    return params.takeError();
  for (const auto &entry : **params) {
    Expected<LegacyParam> param =
        readParam(entry.first, entry.second, paramsPath.field(entry.first));
    if (!param)
      return param.takeError();
    document.params.push_back(std::move(*param));
  }
  llvm::sort(document.params, [](const LegacyParam &a, const LegacyParam &b) {
    return a.name < b.name;
  });
  return document;
}

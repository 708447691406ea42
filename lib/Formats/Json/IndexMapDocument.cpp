//===- IndexMapDocument.cpp - The JSON index-map document -----------------===//

#include "ucp/Formats/Json/IndexMapDocument.h"
#include "ucp/Formats/Json/JsonReading.h"

using namespace ucp;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

/// Reads one parameter's index map.
static Expected<IndexMap> readIndexMap(StringRef name, const json::Value &value,
                                       const JsonPath &path) {
  Expected<const json::Object *> object =
      getObjectWithKeys(value, {"logical_shape", "ranks"}, path);
  if (!object)
    return object.takeError();
  IndexMap indexMap;
  indexMap.name = name.str();
  Expected<Extents> shape = getIntegersAt(**object, "logical_shape", path);
  if (!shape)
    return shape.takeError();
  indexMap.logicalShape = std::move(*shape);

  JsonPath ranksPath = path.field("ranks");
  Expected<const json::Object *> ranks = getObjectAt(**object, "ranks", path);
  if (!ranks)
    return ranks.takeError();
  Expected<std::map<int64_t, StringRef>> keyOfRank =
      getRankKeys(**ranks, ranksPath);
  if (!keyOfRank)
    return keyOfRank.takeError();
  indexMap.worldSize = keyOfRank->empty() ? 1 : keyOfRank->rbegin()->first + 1;
  for (auto [rank, key] : *keyOfRank) {
    JsonPath rankPath = ranksPath.field(key);
    Expected<const json::Object *> rankObject = getObjectWithKeys(
        *(*ranks)->get(key), {"shard_shape", "index"}, rankPath);
    if (!rankObject)
      return rankObject.takeError();
    IndexShard &shard = indexMap.shards.emplace_back();
    shard.rank = rank;
    Expected<Extents> shardShape =
        getIntegersAt(**rankObject, "shard_shape", rankPath);
    if (!shardShape)
      return shardShape.takeError();
    shard.shape = std::move(*shardShape);
    Expected<Extents> index = getIntegersAt(**rankObject, "index", rankPath);
    if (!index)
      return index.takeError();
    shard.index.assign(index->begin(), index->end());
  }
  return indexMap;
}

Expected<std::vector<IndexMap>> ucp::parseIndexMapDocument(StringRef text) {
  Expected<json::Value> root = parseJson(text);
  if (!root)
    return root.takeError();
  JsonPath path;
  Expected<const json::Object *> object =
      getObjectWithKeys(*root, {"params"}, path);
  if (!object)
    return object.takeError();
  JsonPath paramsPath = path.field("params");
  Expected<const json::Object *> params = getObjectAt(**object, "params", path);
  if (!params)
    return params.takeError();
  std::vector<IndexMap> maps;
  for (const auto &entry : **params) {
    Expected<IndexMap> map =
        readIndexMap(entry.first, entry.second, paramsPath.field(entry.first));
    if (!map)
      return map.takeError();
    maps.push_back(std::move(*map));
  }
  llvm::sort(maps, [](const IndexMap &a, const IndexMap &b) {
    return a.name < b.name;
  });
  return maps;
}

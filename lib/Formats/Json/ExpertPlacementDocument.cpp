//===- ExpertPlacementDocument.cpp - AutoEP descriptors in JSON -----------===//

#include "ucp/Formats/Json/ExpertPlacementDocument.h"
#include "ucp/Formats/Json/JsonReading.h"

using namespace ucp;
using llvm::Expected;
namespace json = llvm::json;

/// Reads the positive integer under `key`.
static Expected<int64_t> getPositive(const json::Object &object,
                                     llvm::StringRef key,
                                     const JsonPath &path) {
  Expected<int64_t> number = getIntegerAt(object, key, path);
  if (!number)
    return number.takeError();
  if (*number <= 0)
    return path.field(key).error("must be positive, got " +
                                 std::to_string(*number));
  return *number;
}

Expected<ExpertPlacement> ucp::parseExpertPlacement(llvm::StringRef text) {
  Expected<json::Value> root = parseJson(text);
  if (!root)
    return root.takeError();
  JsonPath path;
  Expected<const json::Object *> object = getObject(*root, path);
  if (!object)
    return object.takeError();
  if (llvm::Error error = checkKeys(
          **object, {"version", "num_experts", "ep_size", "ranks"}, path))
    return std::move(error);
  Expected<int64_t> versionNumber = getIntegerAt(**object, "version", path);
  if (!versionNumber)
    return versionNumber.takeError();
  if (*versionNumber != 1)
    return path.field("version").error("placement descriptor version " +
                                       std::to_string(*versionNumber) +
                                       " is not the supported version 1");

  ExpertPlacement placement;
  Expected<int64_t> numExperts = getPositive(**object, "num_experts", path);
  if (!numExperts)
    return numExperts.takeError();
  Expected<int64_t> epSize = getPositive(**object, "ep_size", path);
  if (!epSize)
    return epSize.takeError();
  placement.numExperts = *numExperts;
  placement.epSize = *epSize;

  JsonPath ranksPath = path.field("ranks");
  Expected<const json::Array *> ranks = getArrayAt(**object, "ranks", path);
  if (!ranks)
    return ranks.takeError();
  if (static_cast<int64_t>((*ranks)->size()) != placement.epSize)
    return ranksPath.error("ep_size is " + std::to_string(placement.epSize) +
                           " but " + std::to_string((*ranks)->size()) +
                           " ranks are described");
  placement.experts.resize(placement.epSize);
  std::vector<bool> seen(placement.epSize, false);
  for (auto [i, entry] : llvm::enumerate(**ranks)) {
    JsonPath entryPath = ranksPath.index(i);
    Expected<const json::Object *> entryObject =
        getObjectWithKeys(entry, {"rank", "experts"}, entryPath);
    if (!entryObject)
      return entryObject.takeError();
    Expected<int64_t> rank = getIntegerAt(**entryObject, "rank", entryPath);
    if (!rank)
      return rank.takeError();
    if (*rank < 0 || *rank >= placement.epSize)
      return entryPath.field("rank").error(
          "rank " + std::to_string(*rank) + " is outside [0, " +
          std::to_string(placement.epSize) + ")");
    if (seen[*rank])
      return entryPath.field("rank").error("rank " + std::to_string(*rank) +
                                           " is described twice");
    seen[*rank] = true;
    Expected<Extents> experts =
        getIntegersAt(**entryObject, "experts", entryPath);
    if (!experts)
      return experts.takeError();
    placement.experts[*rank].assign(experts->begin(), experts->end());
  }
  if (llvm::Error error = validateExpertPlacement(placement))
    return std::move(error);
  return placement;
}

//===- ExpertPlacementDocument.cpp - AutoEP descriptors in JSON -----------===//

#include "ucp/IO/ExpertPlacementDocument.h"
#include "JsonReading.h"

using namespace ucp;
using llvm::Expected;
namespace json = llvm::json;

/// Reads the positive integer under `key`.
static Expected<int64_t> getPositive(const json::Object &object,
                                     llvm::StringRef key,
                                     const JsonPath &path) {
  Expected<const json::Value *> value = getKey(object, key, path);
  if (!value)
    return value.takeError();
  Expected<int64_t> number = getInteger(**value, path.field(key));
  if (!number)
    return number.takeError();
  if (*number <= 0)
    return path.field(key).error("must be positive, got " +
                                 std::to_string(*number));
  return *number;
}

Expected<ExpertPlacement> ucp::parseExpertPlacement(llvm::StringRef text) {
  Expected<json::Value> root = json::parse(text);
  if (!root)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "not valid JSON: " +
                                       llvm::toString(root.takeError()));
  JsonPath path;
  Expected<const json::Object *> object = getObject(*root, path);
  if (!object)
    return object.takeError();
  if (llvm::Error error = checkKeys(
          **object, {"version", "num_experts", "ep_size", "ranks"}, path))
    return std::move(error);
  Expected<const json::Value *> version = getKey(**object, "version", path);
  if (!version)
    return version.takeError();
  Expected<int64_t> versionNumber = getInteger(**version, path.field("version"));
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

  Expected<const json::Value *> ranksValue = getKey(**object, "ranks", path);
  if (!ranksValue)
    return ranksValue.takeError();
  JsonPath ranksPath = path.field("ranks");
  Expected<const json::Array *> ranks = getArray(**ranksValue, ranksPath);
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
    Expected<const json::Object *> entryObject = getObject(entry, entryPath);
    if (!entryObject)
      return entryObject.takeError();
    if (llvm::Error error =
            checkKeys(**entryObject, {"rank", "experts"}, entryPath))
      return std::move(error);
    Expected<const json::Value *> rankValue =
        getKey(**entryObject, "rank", entryPath);
    if (!rankValue)
      return rankValue.takeError();
    Expected<int64_t> rank = getInteger(**rankValue, entryPath.field("rank"));
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
    Expected<Extents> experts = getIntegersAt(**entryObject, "experts", entryPath);
    if (!experts)
      return experts.takeError();
    placement.experts[*rank].assign(experts->begin(), experts->end());
  }
  if (llvm::Error error = validateExpertPlacement(placement))
    return std::move(error);
  return placement;
}

//===- PlanDocument.cpp - The JSON plan document --------------------------===//

#include "ucp/Formats/Json/PlanDocument.h"
#include "ucp/Formats/Json/JsonReading.h"
#include "ucp/Map/Invariants.h"

#include "llvm/Support/JSON.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

/// Writes `value` on one line as a raw value of `j`.
static void writeCompact(json::OStream &j,
                         llvm::function_ref<void(json::OStream &)> write) {
  j.rawValue([&](llvm::raw_ostream &os) {
    json::OStream line(os);
    write(line);
  });
}

void ucp::writePlanDocument(llvm::ArrayRef<TransferPlan> plans,
                            llvm::raw_ostream &os) {
  std::vector<const TransferPlan *> byName;
  for (const TransferPlan &plan : plans)
    byName.push_back(&plan);
  llvm::sort(byName, [](const TransferPlan *a, const TransferPlan *b) {
    return a->name < b->name;
  });
  auto view = [](json::OStream &j, std::optional<int64_t> rank,
                 const StridedView &v) {
    j.array([&] {
      if (rank)
        j.value(*rank);
      j.value(v.offset);
      j.value(json::Array(v.strides));
    });
  };
  json::OStream j(os, /*IndentSize=*/2);
  j.object([&] {
    j.attribute("version", 1);
    j.attributeObject("params", [&] {
      for (const TransferPlan *plan : byName) {
        j.attributeObject(plan->name, [&] {
          j.attribute("source_world", plan->sourceWorld);
          j.attribute("target_world", plan->targetWorld);
          for (auto [key, shards] :
               {std::pair{"source_shards", &plan->sourceShards},
                std::pair{"target_shards", &plan->targetShards}})
            j.attributeObject(key, [&] {
              for (const auto &[rank, shape] : *shards) {
                j.attributeBegin(std::to_string(rank));
                writeCompact(j, [&](json::OStream &line) {
                  line.value(json::Array(shape));
                });
                j.attributeEnd();
              }
            });
          j.attributeArray("segments", [&] {
            for (const Segment &s : plan->segments)
              writeCompact(j, [&](json::OStream &line) {
                line.object([&] {
                  line.attribute("shape", json::Array(s.shape));
                  line.attributeBegin("source");
                  view(line, s.sourceRank, s.source);
                  line.attributeEnd();
                  line.attributeBegin("target");
                  view(line, s.targetRank, s.target);
                  line.attributeEnd();
                  if (s.scale != 1.0)
                    line.attribute("scale", s.scale);
                });
              });
          });
          j.attributeArray("fill", [&] {
            for (const Fill &f : plan->fills)
              writeCompact(j, [&](json::OStream &line) {
                line.object([&] {
                  line.attribute("rank", f.rank);
                  line.attribute("shape", json::Array(f.shape));
                  line.attributeBegin("target");
                  view(line, std::nullopt, f.target);
                  line.attributeEnd();
                });
              });
          });
        });
      }
    });
  });
  os << "\n";
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Reads the parts of a plan document, tracking where it is.
class PlanReader {
public:
  Expected<TransferPlan> readPlan(StringRef name, const json::Value &value,
                                  const JsonPath &path);

private:
  /// Reads `[rank, offset, [strides]]` (`withRank`) or `[offset, [strides]]`.
  Error readView(const json::Value &value, const JsonPath &path, int64_t *rank,
                 StridedView &view);
  Error readShards(const json::Object &object, StringRef key, int64_t world,
                   const JsonPath &path, std::map<int64_t, Extents> &shards);
  Error readSegments(const json::Object &object, const JsonPath &path,
                     TransferPlan &plan);
  Error readFills(const json::Object &object, const JsonPath &path,
                  TransferPlan &plan);
};

} // namespace

Error PlanReader::readView(const json::Value &value, const JsonPath &path,
                           int64_t *rank, StridedView &view) {
  Expected<const json::Array *> array = getArray(value, path);
  if (!array)
    return array.takeError();
  size_t expected = rank ? 3 : 2;
  if ((*array)->size() != expected)
    return path.error(
        std::string("expected ") +
        (rank ? "[rank, offset, [strides]]" : "[offset, [strides]]") +
        ", got an array of " + std::to_string((*array)->size()) + " elements");
  size_t at = 0;
  if (rank) {
    Expected<int64_t> number = getInteger((**array)[at], path.index(at));
    if (!number)
      return number.takeError();
    *rank = *number;
    ++at;
  }
  Expected<int64_t> offset = getInteger((**array)[at], path.index(at));
  if (!offset)
    return offset.takeError();
  view.offset = *offset;
  Expected<Extents> strides =
      getIntegers((**array)[at + 1], path.index(at + 1));
  if (!strides)
    return strides.takeError();
  view.strides = std::move(*strides);
  return Error::success();
}

Error PlanReader::readShards(const json::Object &object, StringRef key,
                             int64_t world, const JsonPath &path,
                             std::map<int64_t, Extents> &shards) {
  JsonPath shardsPath = path.field(key);
  Expected<const json::Object *> ranks = getObjectAt(object, key, path);
  if (!ranks)
    return ranks.takeError();
  Expected<std::map<int64_t, StringRef>> keyOfRank =
      getRankKeys(**ranks, shardsPath);
  if (!keyOfRank)
    return keyOfRank.takeError();
  for (auto [rank, rankKey] : *keyOfRank) {
    JsonPath rankPath = shardsPath.field(rankKey);
    Expected<Extents> shape = getIntegers(*(*ranks)->get(rankKey), rankPath);
    if (!shape)
      return shape.takeError();
    if (std::string error = checkShardHeader(rank, *shape, world);
        !error.empty())
      return rankPath.error(error);
    shards[rank] = std::move(*shape);
  }
  return Error::success();
}

Error PlanReader::readSegments(const json::Object &object, const JsonPath &path,
                               TransferPlan &plan) {
  JsonPath segmentsPath = path.field("segments");
  Expected<const json::Array *> segments = getArrayAt(object, "segments", path);
  if (!segments)
    return segments.takeError();
  for (auto [i, value] : llvm::enumerate(**segments)) {
    JsonPath at = segmentsPath.index(i);
    Expected<const json::Object *> entry =
        getObjectWithKeys(value, {"shape", "source", "target", "scale"}, at);
    if (!entry)
      return entry.takeError();
    Segment segment;
    Expected<Extents> shape = getIntegersAt(**entry, "shape", at);
    if (!shape)
      return shape.takeError();
    segment.shape = std::move(*shape);
    for (auto [key, rank, view] :
         {std::tuple{"source", &segment.sourceRank, &segment.source},
          std::tuple{"target", &segment.targetRank, &segment.target}}) {
      Expected<const json::Value *> side = getKey(**entry, key, at);
      if (!side)
        return side.takeError();
      if (Error error = readView(**side, at.field(key), rank, *view))
        return error;
    }
    if (const json::Value *scale = (*entry)->get("scale")) {
      std::optional<double> number = scale->getAsNumber();
      if (!number)
        return at.field("scale").error("expected a number, got " +
                                       getKindName(*scale));
      segment.scale = *number;
    }
    auto source = plan.sourceShards.find(segment.sourceRank);
    if (source == plan.sourceShards.end())
      return at.field("source").error("reads from source rank " +
                                      std::to_string(segment.sourceRank) +
                                      ", which declares no shard");
    auto target = plan.targetShards.find(segment.targetRank);
    if (target == plan.targetShards.end())
      return at.field("target").error("writes target rank " +
                                      std::to_string(segment.targetRank) +
                                      ", which declares no shard");
    if (std::string error =
            checkSegment(segment, source->second, target->second);
        !error.empty())
      return at.error(error);
    plan.segments.push_back(std::move(segment));
  }
  return Error::success();
}

Error PlanReader::readFills(const json::Object &object, const JsonPath &path,
                            TransferPlan &plan) {
  JsonPath fillsPath = path.field("fill");
  Expected<const json::Array *> fills = getArrayAt(object, "fill", path);
  if (!fills)
    return fills.takeError();
  for (auto [i, value] : llvm::enumerate(**fills)) {
    JsonPath at = fillsPath.index(i);
    Expected<const json::Object *> entry =
        getObjectWithKeys(value, {"rank", "shape", "target"}, at);
    if (!entry)
      return entry.takeError();
    Fill fill;
    Expected<int64_t> rank = getIntegerAt(**entry, "rank", at);
    if (!rank)
      return rank.takeError();
    fill.rank = *rank;
    Expected<Extents> shape = getIntegersAt(**entry, "shape", at);
    if (!shape)
      return shape.takeError();
    fill.shape = std::move(*shape);
    Expected<const json::Value *> target = getKey(**entry, "target", at);
    if (!target)
      return target.takeError();
    if (Error error =
            readView(**target, at.field("target"), nullptr, fill.target))
      return error;
    auto shard = plan.targetShards.find(fill.rank);
    if (shard == plan.targetShards.end())
      return at.field("rank").error("target rank " + std::to_string(fill.rank) +
                                    " declares no shard");
    if (std::string error = checkFill(fill, shard->second); !error.empty())
      return at.error(error);
    plan.fills.push_back(std::move(fill));
  }
  return Error::success();
}

Expected<TransferPlan> PlanReader::readPlan(StringRef name,
                                            const json::Value &value,
                                            const JsonPath &path) {
  Expected<const json::Object *> object =
      getObjectWithKeys(value,
                        {"source_world", "target_world", "source_shards",
                         "target_shards", "segments", "fill"},
                        path);
  if (!object)
    return object.takeError();
  TransferPlan plan;
  plan.name = name.str();
  for (auto [key, world] : {std::pair{"source_world", &plan.sourceWorld},
                            std::pair{"target_world", &plan.targetWorld}}) {
    Expected<int64_t> number = getIntegerAt(**object, key, path);
    if (!number)
      return number.takeError();
    if (std::string error = checkWorldSize(*number); !error.empty())
      return path.field(key).error(error);
    *world = *number;
  }
  if (Error error = readShards(**object, "source_shards", plan.sourceWorld,
                               path, plan.sourceShards))
    return std::move(error);
  if (Error error = readShards(**object, "target_shards", plan.targetWorld,
                               path, plan.targetShards))
    return std::move(error);
  if (Error error = readSegments(**object, path, plan))
    return std::move(error);
  if (Error error = readFills(**object, path, plan))
    return std::move(error);
  // Writes are named by their place in the document's two lists, and the
  // error points at the later of two writes of one element.
  auto pathOf = [&](PlanWrite write) {
    return write.isFill ? path.field("fill").index(write.index)
                        : path.field("segments").index(write.index);
  };
  if (std::optional<PlanTilingError> error =
          checkPlanTiling(plan, [&](PlanWrite write) {
            return (write.isFill ? "fill[" : "segments[") +
                   std::to_string(write.index) + "]";
          }))
    return (error->write ? pathOf(*error->write) : path)
        .error(error->message);
  return plan;
}

Expected<std::vector<TransferPlan>> ucp::parsePlanDocument(StringRef text) {
  Expected<json::Value> root = parseJson(text);
  if (!root)
    return root.takeError();
  JsonPath path;
  Expected<const json::Object *> object =
      getObjectWithKeys(*root, {"version", "params"}, path);
  if (!object)
    return object.takeError();
  Expected<int64_t> version = getIntegerAt(**object, "version", path);
  if (!version)
    return version.takeError();
  if (*version != 1)
    return path.field("version").error("plan document version " +
                                       std::to_string(*version) +
                                       " is not the supported version 1");
  JsonPath paramsPath = path.field("params");
  Expected<const json::Object *> params = getObjectAt(**object, "params", path);
  if (!params)
    return params.takeError();
  std::vector<TransferPlan> plans;
  PlanReader reader;
  for (const auto &entry : **params) {
    Expected<TransferPlan> plan = reader.readPlan(
        entry.first, entry.second, paramsPath.field(entry.first));
    if (!plan)
      return plan.takeError();
    plans.push_back(std::move(*plan));
  }
  llvm::sort(plans, [](const TransferPlan &a, const TransferPlan &b) {
    return a.name < b.name;
  });
  return plans;
}

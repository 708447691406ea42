//===- PlanChecks.cpp - Local invariants of transfer plans ----------------===//

#include "ucp/Analysis/BoxSweep.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Plan/TransferPlan.h"


#include <cmath>
#include <tuple>

using namespace ucp;
using llvm::ArrayRef;

std::optional<ReplicaPolicy::Kind>
ucp::parseReplicaPolicyKind(llvm::StringRef name) {
  // One table of names: getReplicaPolicyName's.
  for (ReplicaPolicy::Kind kind :
       {ReplicaPolicy::Lowest, ReplicaPolicy::Local, ReplicaPolicy::Node,
        ReplicaPolicy::Balance})
    if (getReplicaPolicyName(kind) == name)
      return kind;
  return std::nullopt;
}

llvm::StringRef ucp::getReplicaPolicyName(ReplicaPolicy::Kind kind) {
  switch (kind) {
  case ReplicaPolicy::Lowest:
    return "lowest";
  case ReplicaPolicy::Local:
    return "local";
  case ReplicaPolicy::Node:
    return "node";
  case ReplicaPolicy::Balance:
    return "balance";
  }
  return "unknown";
}

std::string ucp::checkSegment(const Segment &segment,
                              ArrayRef<int64_t> sourceShard,
                              ArrayRef<int64_t> targetShard) {
  if (std::string e =
          checkViews(segment.shape,
                     {{&segment.source, getNumElements(sourceShard).value_or(0),
                       "source", "the source shard"},
                      {&segment.target, getNumElements(targetShard).value_or(0),
                       "target", "the target shard"}});
      !e.empty())
    return e;
  if (!std::isfinite(segment.scale) || segment.scale == 0.0)
    return "scale must be finite and non-zero, got " +
           formatScale(segment.scale);
  return {};
}

std::string ucp::checkFill(const Fill &fill, ArrayRef<int64_t> targetShard) {
  return checkViews(fill.shape,
                    {{&fill.target, getNumElements(targetShard).value_or(0),
                      "target", "the target shard"}});
}

/// Checks that `writes` (named for diagnostics) write every element of
/// target rank `rank`'s shard of `shape` exactly once.
static std::string checkShardTiling(
    int64_t rank, ArrayRef<int64_t> shape,
    ArrayRef<std::tuple<ArrayRef<int64_t>, const StridedView *, std::string>>
        writes) {
  llvm::SmallVector<Box> boxes;
  std::vector<const std::string *> writers;
  for (const auto &[writeShape, view, name] : writes) {
    if (!decomposeView(writeShape, *view, shape, Repeats::Keep, boxes))
      return "target rank " + std::to_string(rank) + ": " + name +
             " is too irregular to check (its view needs more than " +
             std::to_string(kMaxBoxesPerView) + " boxes)";
    writers.resize(boxes.size(), &name);
  }
  std::string error;
  sweepBoxes(boxes, shape, [&](const Box &cell, ArrayRef<unsigned> owners) {
    if (!error.empty() || owners.size() == 1)
      return;
    error = "target rank " + std::to_string(rank) + ": element " +
            formatList(cell.lo) + " of its shard is ";
    if (owners.empty())
      error += "written by no copy or fill";
    else
      error += "written by both " + *writers[owners[0]] + " and " +
               *writers[owners[1]];
  });
  return error;
}

std::optional<std::pair<int64_t, std::string>>
ucp::checkPlanTiling(const TransferPlan &plan) {
  // Every target shard's writes, gathered in one pass over the plan.
  using Write = std::tuple<ArrayRef<int64_t>, const StridedView *, std::string>;
  std::map<int64_t, std::vector<Write>> writesOfRank;
  for (const auto &[rank, shape] : plan.targetShards)
    writesOfRank[rank];
  for (auto [i, segment] : llvm::enumerate(plan.segments))
    writesOfRank[segment.targetRank].emplace_back(
        segment.shape, &segment.target, "copy #" + std::to_string(i));
  for (auto [i, fill] : llvm::enumerate(plan.fills))
    writesOfRank[fill.rank].emplace_back(fill.shape, &fill.target,
                                         "fill #" + std::to_string(i));
  for (const auto &[rank, writes] : writesOfRank) {
    auto shape = plan.targetShards.find(rank);
    if (shape == plan.targetShards.end())
      return std::pair(rank,
                       "target rank " + std::to_string(rank) + " has no shard");
    if (std::string error = checkShardTiling(rank, shape->second, writes);
        !error.empty())
      return std::pair(rank, std::move(error));
  }
  return std::nullopt;
}

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

namespace {
/// A write of one target shard: its shape, its view into the shard, and
/// which write of the plan it is.
struct ShardWrite {
  ArrayRef<int64_t> shape;
  const StridedView *view;
  PlanWrite write;
};
} // namespace

/// Checks that `writes` write every element of target rank `rank`'s shard
/// of `shape` exactly once.
static std::optional<PlanTilingError>
checkShardTiling(int64_t rank, ArrayRef<int64_t> shape,
                 ArrayRef<ShardWrite> writes,
                 llvm::function_ref<std::string(PlanWrite)> nameWrite) {
  std::string prefix = "target rank " + std::to_string(rank) + ": ";
  llvm::SmallVector<Box> boxes;
  std::vector<const ShardWrite *> writers;
  for (const ShardWrite &write : writes) {
    if (!decomposeView(write.shape, *write.view, shape, Repeats::Keep, boxes))
      return PlanTilingError{
          rank,
          prefix + nameWrite(write.write) +
              " is too irregular to check (its view needs more than " +
              std::to_string(kMaxBoxesPerView) + " boxes)",
          write.write, std::nullopt};
    writers.resize(boxes.size(), &write);
  }
  std::optional<PlanTilingError> error;
  sweepBoxes(boxes, shape, [&](const Box &cell, ArrayRef<unsigned> owners) {
    if (error || owners.size() == 1)
      return;
    error = PlanTilingError{rank, prefix + "element " + formatList(cell.lo) +
                                      " of its shard is "};
    if (owners.empty()) {
      error->message += "written by no copy or fill";
      return;
    }
    // Boxes are numbered in write order: the higher owner is the later.
    PlanWrite first = writers[std::min(owners[0], owners[1])]->write;
    PlanWrite second = writers[std::max(owners[0], owners[1])]->write;
    error->message += "written by both " + nameWrite(first) + " and " +
                      nameWrite(second);
    error->write = second;
    error->other = first;
  });
  return error;
}

std::optional<PlanTilingError>
ucp::checkPlanTiling(const TransferPlan &plan,
                     llvm::function_ref<std::string(PlanWrite)> nameWrite) {
  // Every target shard's writes, gathered in one pass over the plan.
  std::map<int64_t, std::vector<ShardWrite>> writesOfRank;
  for (const auto &[rank, shape] : plan.targetShards)
    writesOfRank[rank];
  for (auto [i, segment] : llvm::enumerate(plan.segments))
    writesOfRank[segment.targetRank].push_back(
        {segment.shape, &segment.target, PlanWrite{false, i}});
  for (auto [i, fill] : llvm::enumerate(plan.fills))
    writesOfRank[fill.rank].push_back(
        {fill.shape, &fill.target, PlanWrite{true, i}});
  for (const auto &[rank, writes] : writesOfRank) {
    auto shape = plan.targetShards.find(rank);
    if (shape == plan.targetShards.end())
      return PlanTilingError{rank, "target rank " + std::to_string(rank) +
                                       " has no shard",
                             writes.front().write, std::nullopt};
    if (std::optional<PlanTilingError> error =
            checkShardTiling(rank, shape->second, writes, nameWrite))
      return error;
  }
  return std::nullopt;
}

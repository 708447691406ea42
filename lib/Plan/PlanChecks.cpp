//===- PlanChecks.cpp - Local invariants of transfer plans ----------------===//

#include "ucp/Analysis/BoxSweep.h"
#include "ucp/Plan/TransferPlan.h"

#include <cmath>

using namespace ucp;
using llvm::ArrayRef;

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

std::string ucp::checkTargetTiling(const TransferPlan &plan, int64_t rank) {
  auto shardIt = plan.targetShards.find(rank);
  if (shardIt == plan.targetShards.end())
    return "target rank " + std::to_string(rank) + " has no shard";
  ArrayRef<int64_t> shape = shardIt->second;

  // Boxes of every write, named for diagnostics.
  llvm::SmallVector<Box> boxes;
  std::vector<std::string> writers;
  auto add = [&](ArrayRef<int64_t> writeShape, const StridedView &view,
                 const std::string &name) {
    decomposeView(writeShape, view, shape, Repeats::Keep, boxes);
    writers.resize(boxes.size(), name);
  };
  for (auto [i, segment] : llvm::enumerate(plan.segments))
    if (segment.targetRank == rank)
      add(segment.shape, segment.target, "copy #" + std::to_string(i));
  for (auto [i, fill] : llvm::enumerate(plan.fills))
    if (fill.rank == rank)
      add(fill.shape, fill.target, "fill #" + std::to_string(i));

  std::string error;
  sweepBoxes(boxes, shape, [&](const Box &cell, ArrayRef<unsigned> owners) {
    if (!error.empty() || owners.size() == 1)
      return;
    error = "target rank " + std::to_string(rank) + ": element " +
            formatList(cell.lo) + " of its shard is ";
    if (owners.empty())
      error += "written by no copy or fill";
    else
      error += "written by both " + writers[owners[0]] + " and " +
               writers[owners[1]];
  });
  return error;
}

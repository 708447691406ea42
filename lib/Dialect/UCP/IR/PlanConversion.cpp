//===- PlanConversion.cpp - ucp plan ops <-> plain plans ------------------===//

#include "ucp/Dialect/UCP/IR/PlanConversion.h"

using namespace mlir;
using namespace ucp;

static Extents toExtents(llvm::ArrayRef<int64_t> values) {
  return Extents(values.begin(), values.end());
}

Segment ucp::toSegment(CopyOp copy) {
  auto target = copy->getParentOfType<TargetShardOp>();
  return {toExtents(copy.getShape()),
          static_cast<int64_t>(copy.getSourceRank()),
          {static_cast<int64_t>(copy.getSrcOffset()),
           toExtents(copy.getSrcStrides())},
          static_cast<int64_t>(target.getRank()),
          {static_cast<int64_t>(copy.getDstOffset()),
           toExtents(copy.getDstStrides())},
          copy.getScale().convertToDouble()};
}

Fill ucp::toFill(FillOp fill) {
  auto target = fill->getParentOfType<TargetShardOp>();
  return {static_cast<int64_t>(target.getRank()),
          toExtents(fill.getShape()),
          {static_cast<int64_t>(fill.getDstOffset()),
           toExtents(fill.getDstStrides())}};
}

TransferPlan ucp::toTransferPlan(PlanOp planOp) {
  TransferPlan plan;
  plan.name = planOp.getSymName().str();
  plan.sourceWorld = planOp.getSourceWorld();
  plan.targetWorld = planOp.getTargetWorld();
  for (SourceShardOp source : planOp.getSourceShards())
    plan.sourceShards[source.getRank()] = toExtents(source.getShardShape());
  for (TargetShardOp target : planOp.getTargetShards()) {
    plan.targetShards[target.getRank()] = toExtents(target.getShardShape());
    for (Operation &op : target.getBody().front()) {
      if (auto copy = dyn_cast<CopyOp>(op))
        plan.segments.push_back(toSegment(copy));
      else if (auto fill = dyn_cast<FillOp>(op))
        plan.fills.push_back(toFill(fill));
    }
  }
  return plan;
}

PlanOp ucp::buildPlanOp(OpBuilder &builder, Location loc,
                        const TransferPlan &plan) {
  auto planOp = builder.create<PlanOp>(loc, plan.name, plan.sourceWorld,
                                       plan.targetWorld);
  OpBuilder::InsertionGuard guard(builder);
  Block *body = builder.createBlock(&planOp.getBody());
  for (const auto &[rank, shape] : plan.sourceShards)
    builder.create<SourceShardOp>(loc, rank, shape);
  // Each target shard's writes, gathered in one pass: looking them up per
  // shard would cost the shards times the writes.
  std::map<int64_t,
           std::pair<std::vector<const Segment *>, std::vector<const Fill *>>>
      writesOfRank;
  for (const Segment &segment : plan.segments)
    writesOfRank[segment.targetRank].first.push_back(&segment);
  for (const Fill &fill : plan.fills)
    writesOfRank[fill.rank].second.push_back(&fill);
  for (const auto &[rank, shape] : plan.targetShards) {
    builder.setInsertionPointToEnd(body);
    auto target = builder.create<TargetShardOp>(loc, rank, shape);
    builder.createBlock(&target.getBody());
    const auto &[segments, fills] = writesOfRank[rank];
    for (const Segment *segment : segments)
      builder.create<CopyOp>(loc, segment->shape, segment->sourceRank,
                             segment->source.offset, segment->source.strides,
                             segment->target.offset, segment->target.strides,
                             llvm::APFloat(segment->scale));
    for (const Fill *fill : fills)
      builder.create<FillOp>(loc, fill->shape, fill->target.offset,
                             fill->target.strides);
  }
  return planOp;
}

//===- UCPOps.cpp - ucp dialect operations --------------------------------===//
//
// Op verifiers. Each delegates to the shared local checks of ucp/Map so that
// the ops and the importers refuse a map with the same words.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace ucp;

#define GET_OP_CLASSES
#include "ucp/Dialect/UCP/IR/UCPOps.cpp.inc"

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

int64_t ParamOp::getNumElements() {
  return ucp::getNumElements(getLogicalShape()).value_or(0);
}

LogicalResult ParamOp::verify() {
  std::string error = checkParamHeader(getLogicalShape(), getWorldSize(),
                                       getOriginalVocabSize());
  if (!error.empty())
    return emitOpError(error);
  return success();
}

LogicalResult ParamOp::verifyRegions() {
  llvm::DenseMap<int64_t, ShardOp> shardOfRank;
  for (Operation &op : getBody().front()) {
    auto shard = dyn_cast<ShardOp>(op);
    if (!shard)
      return op.emitOpError(
          "is not a ucp.shard; a ucp.param holds shards only");
    auto [it, inserted] = shardOfRank.try_emplace(shard.getRank(), shard);
    if (!inserted) {
      InFlightDiagnostic diag = shard.emitOpError()
                                << "rank " << shard.getRank()
                                << " has more than one shard";
      diag.attachNote(it->second.getLoc()) << "first shard of the rank here";
      return diag;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ShardOp
//===----------------------------------------------------------------------===//

ParamOp ShardOp::getParam() { return (*this)->getParentOfType<ParamOp>(); }

int64_t ShardOp::getNumElements() {
  return ucp::getNumElements(getShardShape()).value_or(0);
}

LogicalResult ShardOp::verify() {
  std::string error =
      checkShardHeader(getRank(), getShardShape(), getParam().getWorldSize());
  if (!error.empty())
    return emitOpError(error);
  for (Operation &op : getBody().front()) {
    if (!isa<PieceOp>(op))
      return op.emitOpError(
          "is not a ucp.piece; a ucp.shard holds pieces only");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// PieceOp
//===----------------------------------------------------------------------===//

ShardOp PieceOp::getShard() { return (*this)->getParentOfType<ShardOp>(); }

LogicalResult PieceOp::verify() {
  ShardOp shard = getShard();
  ParamOp param = shard.getParam();
  std::string error =
      checkPiece(toPiece(*this), param.getLogicalShape(), shard.getShardShape(),
                 shard.getRank(), param.getWorldSize());
  if (!error.empty())
    return emitOpError(error);
  return success();
}

//===----------------------------------------------------------------------===//
// PlanOp
//===----------------------------------------------------------------------===//

LogicalResult PlanOp::verify() {
  for (auto [world, what] : {std::pair(getSourceWorld(), "source world size"),
                             std::pair(getTargetWorld(), "target world size")})
    if (std::string error = checkWorldSize(world, what); !error.empty())
      return emitOpError(error);
  return success();
}

/// The place of a copy among its shard's copies, or of a fill among its
/// shard's fills, counted from 0.
static size_t getIndexInShard(Operation *write) {
  size_t index = 0;
  for (Operation *op = write->getPrevNode(); op; op = op->getPrevNode())
    index += op->getName() == write->getName();
  return index;
}

LogicalResult PlanOp::verifyRegions() {
  llvm::DenseMap<int64_t, Operation *> sources, targets;
  for (Operation &op : getBody().front()) {
    llvm::DenseMap<int64_t, Operation *> *seen = nullptr;
    int64_t rank = 0;
    if (auto source = dyn_cast<SourceShardOp>(op)) {
      seen = &sources;
      rank = source.getRank();
    } else if (auto target = dyn_cast<TargetShardOp>(op)) {
      seen = &targets;
      rank = target.getRank();
    } else {
      return op.emitOpError(
          "is not a shard declaration; a ucp.plan holds ucp.source_shard and "
          "ucp.target_shard ops only");
    }
    auto [it, inserted] = seen->try_emplace(rank, &op);
    if (!inserted) {
      InFlightDiagnostic diag = op.emitOpError()
                                << "rank " << rank << " is declared twice";
      diag.attachNote(it->second->getLoc()) << "first declared here";
      return diag;
    }
  }

  // Copies against the shards they read: checked here, where every source
  // shard is known, rather than by each copy searching the plan for its
  // source (the copies times the ranks).
  for (TargetShardOp target : getTargetShards())
    for (CopyOp copy : target.getBody().front().getOps<CopyOp>()) {
      auto source = sources.find(copy.getSourceRank());
      if (source == sources.end())
        return copy.emitOpError("reads from source rank ")
               << copy.getSourceRank() << ", which declares no shard";
      std::string error = checkSegment(
          toSegment(copy), cast<SourceShardOp>(source->second).getShardShape(),
          target.getShardShape());
      if (!error.empty())
        return copy.emitOpError(error);
    }

  // Tiling of every target shard, from one conversion of the plan, whose
  // copies and fills are listed in the order of the ops.
  llvm::SmallVector<Operation *> copies, fills;
  for (TargetShardOp target : getTargetShards())
    for (Operation &op : target.getBody().front())
      (isa<CopyOp>(op) ? copies : fills).push_back(&op);
  auto opOf = [&](PlanWrite write) {
    return (write.isFill ? fills : copies)[write.index];
  };
  std::optional<PlanTilingError> error =
      checkPlanTiling(toTransferPlan(*this), [&](PlanWrite write) {
        return (write.isFill ? "fill #" : "copy #") +
               std::to_string(getIndexInShard(opOf(write)));
      });
  if (!error)
    return success();
  if (!error->write)
    return targets.lookup(error->rank)->emitOpError(error->message);
  InFlightDiagnostic diag = opOf(*error->write)->emitOpError(error->message);
  if (error->other)
    diag.attachNote(opOf(*error->other)->getLoc())
        << "the other write of the element";
  return diag;
}

//===----------------------------------------------------------------------===//
// SourceShardOp, TargetShardOp
//===----------------------------------------------------------------------===//

LogicalResult SourceShardOp::verify() {
  auto plan = (*this)->getParentOfType<PlanOp>();
  std::string error =
      checkShardHeader(getRank(), getShardShape(), plan.getSourceWorld());
  if (!error.empty())
    return emitOpError(error);
  return success();
}

LogicalResult TargetShardOp::verify() {
  auto plan = (*this)->getParentOfType<PlanOp>();
  std::string error =
      checkShardHeader(getRank(), getShardShape(), plan.getTargetWorld());
  if (!error.empty())
    return emitOpError(error);
  for (Operation &op : getBody().front())
    if (!isa<CopyOp, FillOp>(op))
      return op.emitOpError("is not a ucp.copy or ucp.fill; a ucp.target_shard "
                            "holds writes only");
  return success();
}

//===----------------------------------------------------------------------===//
// FillOp
//===----------------------------------------------------------------------===//

LogicalResult FillOp::verify() {
  auto target = (*this)->getParentOfType<TargetShardOp>();
  Fill fill = toFill(*this);
  std::string error = checkFill(fill, target.getShardShape());
  if (!error.empty())
    return emitOpError(error);
  return success();
}

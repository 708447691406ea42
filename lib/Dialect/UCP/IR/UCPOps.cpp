//===- UCPOps.cpp - ucp dialect operations --------------------------------===//
//
// Op verifiers. Each delegates to the shared local checks of ucp/Map so that
// the ops and the importers refuse a map with the same words.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"

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
      return op.emitOpError("is not a ucp.shard; a ucp.param holds shards only");
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
  std::string error = checkShardHeader(getRank(), getShardShape(),
                                       getParam().getWorldSize());
  if (!error.empty())
    return emitOpError(error);
  for (Operation &op : getBody().front()) {
    if (!isa<PieceOp>(op))
      return op.emitOpError("is not a ucp.piece; a ucp.shard holds pieces only");
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
      checkPiece(toPiece(*this), param.getLogicalShape(),
                 shard.getShardShape(), shard.getRank(), param.getWorldSize());
  if (!error.empty())
    return emitOpError(error);
  return success();
}

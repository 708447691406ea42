//===- MapVerification.cpp - Whole-map verification as an analysis --------===//

#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"

#include "mlir/IR/Threading.h"

using namespace mlir;
using namespace ucp;

MapVerification::MapVerification(Operation *op)
    : map(toParamMap(cast<ParamOp>(op))), report(verifyParamMap(map)) {}

/// Attaches a note pointing at `what`. Imported map documents locate ops at
/// their JSON path (a NameLoc), which the file location alone cannot show.
static void notePiece(InFlightDiagnostic &diag, Location loc,
                      llvm::StringRef what) {
  if (auto name = dyn_cast<NameLoc>(loc))
    diag.attachNote(loc) << what << " is at " << name.getName().getValue()
                         << " in the map document";
  else
    diag.attachNote(loc) << what;
}

LogicalResult MapVerification::emitViolations(ParamOp param,
                                              llvm::StringRef role) const {
  if (report.ok())
    return success();
  std::vector<ShardOp> shardOps(param.getShards().begin(),
                                param.getShards().end());
  std::vector<std::vector<PieceOp>> pieceOps;
  for (ShardOp shard : shardOps)
    pieceOps.emplace_back(shard.getPieces().begin(), shard.getPieces().end());
  for (const Violation &violation : report.violations) {
    Location loc = param.getLoc();
    if (violation.first)
      loc = pieceOps[violation.first->shard][violation.first->piece].getLoc();
    else if (violation.shard)
      loc = shardOps[*violation.shard].getLoc();
    InFlightDiagnostic diag = emitError(loc);
    // A located op names its file already.
    if (!role.empty() && isa<UnknownLoc>(loc))
      diag << role << ": ";
    diag << describeViolation(map, violation);
    if (isa<NameLoc>(loc))
      notePiece(diag, loc,
                violation.first   ? "the piece"
                : violation.shard ? "the shard"
                                  : "the parameter");
    if (violation.second && !(*violation.second == *violation.first))
      notePiece(
          diag,
          pieceOps[violation.second->shard][violation.second->piece].getLoc(),
          "the other piece");
  }
  return failure();
}

void ucp::forEachParam(Operation *root, llvm::function_ref<void(ParamOp)> fn) {
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto param = dyn_cast<ParamOp>(op)) {
      fn(param);
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
}

std::vector<std::pair<ParamOp, const MapVerification *>>
ucp::getMapVerifications(AnalysisManager analyses, Operation *root) {
  std::vector<ParamOp> params;
  forEachParam(root, [&](ParamOp param) { params.push_back(param); });
  // The nested managers are made one at a time (making one changes the
  // parent's map); each then computes into its own map, so the analyses
  // themselves run in parallel.
  std::vector<AnalysisManager> managers;
  for (ParamOp param : params)
    managers.push_back(param.getOperation() == root
                           ? analyses
                           : analyses.nest(param.getOperation()));
  std::vector<std::pair<ParamOp, const MapVerification *>> result(
      params.size());
  parallelFor(root->getContext(), 0, params.size(), [&](size_t i) {
    result[i] = {params[i], &managers[i].getAnalysis<MapVerification>()};
  });
  return result;
}

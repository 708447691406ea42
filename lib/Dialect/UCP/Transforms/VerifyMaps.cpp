//===- VerifyMaps.cpp - The --ucp-verify pass -----------------------------===//
//
// Runs the whole-map verifier on every parameter and turns its report into
// diagnostics located at the offending ops.
//
//===----------------------------------------------------------------------===//

#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"

namespace ucp {
#define GEN_PASS_DEF_UCPVERIFYPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {

struct UCPVerifyPass : public ucp::impl::UCPVerifyPassBase<UCPVerifyPass> {
  void runOnOperation() override;
};

} // namespace

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

/// Returns the op of every piece of `param`, indexed like ParamMap.
static std::vector<std::vector<PieceOp>> getPieceOps(ParamOp param) {
  std::vector<std::vector<PieceOp>> ops;
  for (ShardOp shard : param.getShards())
    ops.emplace_back(shard.getPieces().begin(), shard.getPieces().end());
  return ops;
}

void UCPVerifyPass::runOnOperation() {
  for (ParamOp param : getOperation().getOps<ParamOp>()) {
    ParamMap map = toParamMap(param);
    VerifyReport report = verifyParamMap(map);
    if (report.ok())
      continue;

    std::vector<std::vector<PieceOp>> pieceOps = getPieceOps(param);
    std::vector<ShardOp> shardOps(param.getShards().begin(),
                                  param.getShards().end());
    for (const Violation &violation : report.violations) {
      Location loc = param.getLoc();
      if (violation.first)
        loc = pieceOps[violation.first->shard][violation.first->piece].getLoc();
      else if (violation.shard)
        loc = shardOps[*violation.shard].getLoc();
      InFlightDiagnostic diag =
          emitError(loc, describeViolation(map, violation));
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
    return signalPassFailure();
  }
}

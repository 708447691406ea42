//===- CanonicalizeMaps.cpp - The --ucp-canonicalize pass -----------------===//
//
// Brings every `ucp.param` to canonical form in place. The algorithm lives
// in ucp/Canonical; the pass edits only what differs from its result: shards
// out of rank order are moved, the pieces of a shard that is not canonical
// are replaced, and everything else (the param, its attributes, locations
// and canonical shards) is left as it is.
//
//===----------------------------------------------------------------------===//

#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"

namespace ucp {
#define GEN_PASS_DEF_UCPCANONICALIZEPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {

struct UCPCanonicalizePass
    : public ucp::impl::UCPCanonicalizePassBase<UCPCanonicalizePass> {
  void runOnOperation() override;
};

} // namespace

/// Rewrites `param` into `canonical` (its canonical map): shards in rank
/// order, and new pieces, located at their shard, where they differ.
static void rewriteInPlace(ParamOp param, const ParamMap &canonical) {
  Block &body = param.getBody().front();
  std::map<int64_t, ShardOp> shardOfRank;
  for (ShardOp shard : param.getShards())
    shardOfRank[shard.getRank()] = shard;
  // Moving each shard to the end in rank order leaves them sorted; a shard
  // already in place is moved too, which changes nothing but its position.
  for (const Shard &shard : canonical.shards) {
    ShardOp op = shardOfRank.at(shard.rank);
    op->moveBefore(&body, body.end());
    std::vector<Piece> current;
    for (PieceOp piece : op.getPieces())
      current.push_back(toPiece(piece));
    if (current == shard.pieces)
      continue;
    Block &pieces = op.getBody().front();
    while (!pieces.empty())
      pieces.back().erase();
    OpBuilder builder = OpBuilder::atBlockEnd(&pieces);
    for (const Piece &piece : shard.pieces)
      buildPieceOp(builder, op.getLoc(), piece);
  }
}

void UCPCanonicalizePass::runOnOperation() {
  bool changed = false, failedOnce = false;
  forEachParam(getOperation(), [&](ParamOp param) {
    if (failedOnce)
      return;
    ParamMap map = toParamMap(param);
    llvm::Expected<ParamMap> canonical = canonicalizeParamMap(map);
    if (!canonical) {
      param.emitError(llvm::toString(canonical.takeError()));
      failedOnce = true;
      return;
    }
    if (*canonical == map)
      return;
    rewriteInPlace(param, *canonical);
    changed = true;
  });
  if (failedOnce)
    return signalPassFailure();
  if (!changed)
    markAllAnalysesPreserved();
}

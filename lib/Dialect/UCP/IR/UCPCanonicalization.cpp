//===- UCPCanonicalization.cpp - ucp.param's canonicalization patterns ----===//
//
// The rewrites that bring a parameter map to canonical form, registered as
// ucp.param's canonicalization patterns, so that MLIR's --canonicalize
// reaches the form --ucp-canonicalize does (that pass is the greedy driver
// over these patterns). Each rewrites only what differs: shards out of rank
// order are moved, empty pieces dropped, and the pieces of a shard whose
// canonical pieces (folded, merged under P5, by the library) differ are
// replaced; a canonical param, its attributes and locations included, is
// left untouched. A param with a piece too irregular to decompose (the one
// failure of the library's canonical form) is left as it is.
//
//===----------------------------------------------------------------------===//

#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace ucp;

namespace {

/// Shards in ascending rank order.
struct SortShards : public OpRewritePattern<ParamOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ParamOp param,
                                PatternRewriter &rewriter) const override {
    llvm::SmallVector<ShardOp> shards(param.getShards());
    if (llvm::is_sorted(shards, [](ShardOp a, ShardOp b) {
          return a.getRank() < b.getRank();
        }))
      return failure();
    llvm::stable_sort(
        shards, [](ShardOp a, ShardOp b) { return a.getRank() < b.getRank(); });
    Block &body = param.getBody().front();
    for (ShardOp shard : shards)
      rewriter.moveOpBefore(shard, &body, body.end());
    return success();
  }
};

/// A piece of no elements holds nothing.
struct DropEmptyPiece : public OpRewritePattern<PieceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PieceOp piece,
                                PatternRewriter &rewriter) const override {
    if (!llvm::is_contained(toPiece(piece).shape, 0))
      return failure();
    rewriter.eraseOp(piece);
    return success();
  }
};

/// Each shard's pieces as the library's canonical form has them.
struct CanonicalizePieces : public OpRewritePattern<ParamOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ParamOp param,
                                PatternRewriter &rewriter) const override {
    ParamMap map = toParamMap(param);
    llvm::Expected<ParamMap> canonical = canonicalizeParamMap(map);
    if (!canonical) { // Too irregular: --ucp-canonicalize reports it.
      llvm::consumeError(canonical.takeError());
      return failure();
    }
    bool changed = false;
    for (ShardOp shard : param.getShards()) {
      auto target = llvm::find_if(canonical->shards, [&](const Shard &s) {
        return s.rank == static_cast<int64_t>(shard.getRank());
      });
      std::vector<Piece> current;
      for (PieceOp piece : shard.getPieces())
        current.push_back(toPiece(piece));
      if (target == canonical->shards.end() || current == target->pieces)
        continue;
      Block &pieces = shard.getBody().front();
      while (!pieces.empty())
        rewriter.eraseOp(&pieces.back());
      rewriter.setInsertionPointToEnd(&pieces);
      for (const Piece &piece : target->pieces)
        buildPieceOp(rewriter, shard.getLoc(), piece);
      changed = true;
    }
    return success(changed);
  }
};

} // namespace

void ParamOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                          MLIRContext *context) {
  patterns.add<SortShards, CanonicalizePieces>(context);
  patterns.add<DropEmptyPiece>(context);
}

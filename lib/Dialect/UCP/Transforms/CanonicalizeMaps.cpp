//===- CanonicalizeMaps.cpp - The --ucp-canonicalize pass -----------------===//
//
// Replaces every `ucp.param` by the op of its canonical map. The algorithm
// lives in ucp/Canonical; the pass converts to and from the plain map.
//
//===----------------------------------------------------------------------===//

#include "ucp/Canonical/Canonicalize.h"
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

void UCPCanonicalizePass::runOnOperation() {
  for (ParamOp param :
       llvm::make_early_inc_range(getOperation().getOps<ParamOp>())) {
    llvm::Expected<ParamMap> canonical =
        canonicalizeParamMap(toParamMap(param));
    if (!canonical) {
      param.emitError(llvm::toString(canonical.takeError()));
      return signalPassFailure();
    }
    // New pieces are located at their shard; shards and the param keep
    // their own locations.
    std::vector<Location> shardLocs;
    for (ShardOp shard : param.getShards())
      shardLocs.push_back(shard.getLoc());
    OpBuilder builder(param);
    buildParamOp(builder, param.getLoc(), *canonical,
                 [&](int shard, int piece) -> Location {
                   return shard < 0 ? param.getLoc() : shardLocs[shard];
                 });
    param.erase();
  }
}

//===- CanonicalizeMaps.cpp - The --ucp-canonicalize pass -----------------===//
//
// Brings every `ucp.param` to canonical form in place: the greedy driver
// over ucp.param's canonicalization patterns (UCPCanonicalization.cpp),
// which edit only what differs from the library's canonical form (shards
// out of rank order are moved, empty pieces dropped, the pieces of a shard
// that is not canonical replaced); everything else (the param, its
// attributes, locations and canonical shards) is left as it is. A param
// with a piece too irregular to decompose has no canonical form and is
// reported.
//
//===----------------------------------------------------------------------===//

#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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
  // A piece too irregular to decompose has no canonical form: reported.
  std::vector<Operation *> ops;
  bool failedOnce = false;
  forEachParam(getOperation(), [&](ParamOp param) {
    if (failedOnce)
      return;
    llvm::Expected<ParamMap> canonical =
        canonicalizeParamMap(toParamMap(param));
    if (!canonical) {
      param.emitError(llvm::toString(canonical.takeError()));
      failedOnce = true;
      return;
    }
    ops.push_back(param);
    param.walk([&](PieceOp piece) { ops.push_back(piece); });
  });
  if (failedOnce)
    return signalPassFailure();
  // ucp.param's canonicalization patterns, on the params and their pieces
  // only: nothing else of the module is folded or erased.
  RewritePatternSet patterns(&getContext());
  ParamOp::getCanonicalizationPatterns(patterns, &getContext());
  GreedyRewriteConfig config;
  config.strictMode = GreedyRewriteStrictness::ExistingOps;
  config.enableRegionSimplification = GreedySimplifyRegionLevel::Disabled;
  bool changed = false;
  if (failed(
          applyOpPatternsAndFold(ops, std::move(patterns), config, &changed))) {
    getOperation()->emitError("--ucp-canonicalize did not converge");
    return signalPassFailure();
  }
  if (!changed)
    markAllAnalysesPreserved();
}

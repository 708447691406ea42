//===- VerifyMaps.cpp - The --ucp-verify pass -----------------------------===//
//
// Computes the MapVerification analysis of every parameter, turns the first
// failing parameter's report into diagnostics located at the offending ops,
// and keeps the analyses for the passes that require them.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
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

void UCPVerifyPass::runOnOperation() {
  bool failedOnce = false;
  forEachParam(getOperation(), [&](ParamOp param) {
    if (failedOnce)
      return;
    const MapVerification &verification =
        getMapVerification(getAnalysisManager(), getOperation(), param);
    failedOnce = failed(verification.emitViolations(param));
  });
  // Nothing changed, and the analyses are what later passes need.
  markAllAnalysesPreserved();
  if (failedOnce)
    signalPassFailure();
}

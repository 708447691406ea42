//===- VerifyMaps.cpp - The --ucp-verify pass -----------------------------===//
//
// Computes the MapVerification analysis of every parameter (in parallel), turns the first
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
  // Every param is verified (in parallel); the first failing one reports.
  bool failedOnce = false;
  for (auto [param, verification] :
       getMapVerifications(getAnalysisManager(), getOperation()))
    if (failed(verification->emitViolations(param))) {
      failedOnce = true;
      break;
    }
  // Nothing changed, and the analyses are what later passes need.
  markAllAnalysesPreserved();
  if (failedOnce)
    signalPassFailure();
}

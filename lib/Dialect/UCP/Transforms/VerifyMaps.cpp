//===- VerifyMaps.cpp - The --ucp-verify pass -----------------------------===//
//
// Checks the parameters every ucp.layout names, then computes the
// MapVerification analysis of every parameter (in parallel), turns the first
// failing parameter's report into diagnostics located at the offending ops,
// and keeps the analyses for the passes that require them.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
#include "ucp/Dialect/UCP/IR/LayoutUses.h"
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
  // The layouts' uses of the params, every symbol table indexed once.
  SymbolTableCollection tables;
  if (failed(verifyLayoutUses(getOperation(), tables)))
    return signalPassFailure();
  // Every param is verified (in parallel); the first failing one reports.
  for (auto [param, verification] :
       getMapVerifications(getAnalysisManager(), getOperation()))
    if (failed(verification->emitViolations(param)))
      return signalPassFailure();
  // Nothing changed, and the analyses are what later passes need.
  markAllAnalysesPreserved();
}

//===- ExtractMaps.cpp - The --ucp-extract pass ---------------------------===//
//
// A verified map becomes the plan that fills its shards from the full
// tensor: the composition of the map with the one-rank map that holds F
// whole, so that extraction is planned like every other reshard.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Plan/Compose.h"

namespace ucp {
#define GEN_PASS_DEF_UCPEXTRACTPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {
struct UCPExtractPass : public ucp::impl::UCPExtractPassBase<UCPExtractPass> {
  void runOnOperation() override;
};
} // namespace

void UCPExtractPass::runOnOperation() {
  SentElements sent;
  for (auto [param, verification] :
       getMapVerifications(getAnalysisManager(), getOperation())) {
    if (failed(verification->emitViolations(param)))
      return signalPassFailure();
    const ParamMap &map = verification->getMap();
    llvm::Expected<TransferPlan> extract =
        composeMaps(getFullTensorMap(map), map, {}, sent);
    if (!extract) {
      param.emitError(llvm::toString(extract.takeError()));
      return signalPassFailure();
    }
    OpBuilder builder(param);
    buildPlanOp(builder, param.getLoc(), *extract);
    param.erase();
  }
}

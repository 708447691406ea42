//===- LowerCopies.cpp - The --ucp-lower-copies pass ----------------------===//
//
// Plans (and maps, as their extraction from the full tensor) become copy
// programs in executable form; the work is ucp::getExecutablePlan.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Runtime/CopyProgram.h"

namespace ucp {
#define GEN_PASS_DEF_UCPLOWERCOPIESPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {

struct UCPLowerCopiesPass
    : public ucp::impl::UCPLowerCopiesPassBase<UCPLowerCopiesPass> {
  using UCPLowerCopiesPassBase::UCPLowerCopiesPassBase;
  void runOnOperation() override;
};

} // namespace

void UCPLowerCopiesPass::runOnOperation() {
  SentElements sent;
  for (Operation &op :
       llvm::make_early_inc_range(getOperation().getBody()->getOperations())) {
    std::optional<TransferPlan> plan;
    if (auto param = dyn_cast<ParamOp>(op)) {
      ParamMap map = toParamMap(param);
      llvm::Expected<TransferPlan> extract =
          composeMaps(getFullTensorMap(map), map, {}, sent);
      if (!extract) {
        param.emitError(llvm::toString(extract.takeError()));
        return signalPassFailure();
      }
      plan = std::move(*extract);
    } else if (auto planOp = dyn_cast<PlanOp>(op)) {
      plan = toTransferPlan(planOp);
    } else {
      continue;
    }
    if (llvm::Error error = checkScalePower(*plan, scalePower)) {
      op.emitError(llvm::toString(std::move(error)));
      return signalPassFailure();
    }
    OpBuilder builder(&op);
    buildPlanOp(builder, op.getLoc(), getExecutablePlan(*plan, scalePower));
    op.erase();
  }
}

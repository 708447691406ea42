//===- LowerCopies.cpp - The --ucp-lower-copies pass ----------------------===//
//
// Plans become copy programs in executable form; the work is
// ucp::getExecutablePlan. Maps are not plans: --ucp-extract makes each the
// plan of its extraction first, when that is what is wanted.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Plan/CopyProgram.h"

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
  llvm::SmallVector<PlanOp> plans;
  getOperation().walk([&](PlanOp plan) { plans.push_back(plan); });
  for (PlanOp planOp : plans) {
    TransferPlan plan = toTransferPlan(planOp);
    if (llvm::Error error = checkScalePower(plan, scalePower)) {
      planOp.emitError(llvm::toString(std::move(error)));
      return signalPassFailure();
    }
    OpBuilder builder(planOp);
    buildPlanOp(builder, planOp.getLoc(),
                getExecutablePlan(plan, scalePower));
    planOp.erase();
  }
}

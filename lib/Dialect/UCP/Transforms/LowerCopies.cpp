//===- LowerCopies.cpp - The --ucp-lower-copies pass ----------------------===//
//
// Plans (and verified maps, as their extraction from the full tensor)
// become copy programs in executable form; the work is
// ucp::getExecutablePlan.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Plan/Compose.h"
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

private:
  /// Returns the plan `op` (a param, verified as `verification`, or a plan)
  /// stands for, or fails after reporting why.
  FailureOr<TransferPlan> getPlan(Operation *op,
                                  const MapVerification *verification,
                                  SentElements &sent);
};

} // namespace

FailureOr<TransferPlan>
UCPLowerCopiesPass::getPlan(Operation *op, const MapVerification *verification,
                            SentElements &sent) {
  if (auto planOp = dyn_cast<PlanOp>(op))
    return toTransferPlan(planOp);
  auto param = cast<ParamOp>(op);
  if (failed(verification->emitViolations(param)))
    return failure();
  const ParamMap &map = verification->getMap();
  llvm::Expected<TransferPlan> extract =
      composeMaps(getFullTensorMap(map), map, {}, sent);
  if (!extract) {
    param.emitError(llvm::toString(extract.takeError()));
    return failure();
  }
  return std::move(*extract);
}

void UCPLowerCopiesPass::runOnOperation() {
  // Params and plans nested anywhere; neither has the other inside.
  std::vector<Operation *> ops;
  getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!isa<ParamOp, PlanOp>(op))
      return WalkResult::advance();
    ops.push_back(op);
    return WalkResult::skip();
  });
  llvm::DenseMap<Operation *, const MapVerification *> verifications;
  for (auto [param, verification] :
       getMapVerifications(getAnalysisManager(), getOperation()))
    verifications[param] = verification;
  SentElements sent;
  for (Operation *op : ops) {
    FailureOr<TransferPlan> plan = getPlan(op, verifications.lookup(op), sent);
    if (failed(plan))
      return signalPassFailure();
    if (llvm::Error error = checkScalePower(*plan, scalePower)) {
      op->emitError(llvm::toString(std::move(error)));
      return signalPassFailure();
    }
    OpBuilder builder(op);
    buildPlanOp(builder, op->getLoc(), getExecutablePlan(*plan, scalePower));
    op->erase();
  }
}

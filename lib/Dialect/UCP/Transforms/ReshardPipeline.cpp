//===- ReshardPipeline.cpp - Verify, compose and lower, as one pipeline ---===//

#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Support/Error.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace ucp;

void ucp::buildReshardPipeline(OpPassManager &pm,
                               const ReshardPipelineOptions &options) {
  pm.addPass(createUCPVerifyPass());
  pm.addPass(createUCPComposePass(
      {options.target, options.policy, options.ranksPerNode}));
  pm.addPass(createUCPLowerCopiesPass({options.scalePower}));
}

void ucp::registerUCPPipelines() {
  PassPipelineRegistration<ReshardPipelineOptions>(
      "ucp-reshard-pipeline",
      "Verify the maps, compose them with the target maps and lower the plans "
      "to copy programs: what affine-run runs before it moves any data",
      buildReshardPipeline);
}

FailureOr<TransferPrograms> ucp::planTransfers(ModuleOp sources,
                                               ModuleOp targets,
                                               const ReplicaPolicy &policy,
                                               int scalePower) {
  PassManager pm(sources.getContext());
  pm.addPass(createUCPVerifyPass());
  pm.addPass(createUCPComposePass(targets, policy));
  if (failed(pm.run(sources)))
    return failure();
  TransferPrograms programs;
  WalkResult walked = sources->walk([&](PlanOp op) {
    TransferPlan plan = toTransferPlan(op);
    if (llvm::Error error = checkScalePower(plan, scalePower)) {
      op.emitError(llvm::toString(std::move(error)));
      return WalkResult::interrupt();
    }
    programs.emplace(plan.name, lowerPlan(plan));
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  return programs;
}

OwningOpRef<ModuleOp> ucp::buildMapModule(llvm::ArrayRef<ParamMap> maps,
                                          Location loc) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
  for (const ParamMap &map : maps)
    buildParamOp(builder, loc, map);
  return module;
}

//===- ReshardPipeline.cpp - Verify, compose and lower, as one pipeline ---===//

#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"

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
  pm.addPass(createUCPLowerCopiesPass({scalePower}));
  if (failed(pm.run(sources)))
    return failure();
  TransferPrograms programs;
  // The plans are in executable form already; lowering them again only
  // groups their copies by buffer pair.
  sources->walk([&](PlanOp plan) {
    programs[plan.getSymName().str()] = lowerPlan(toTransferPlan(plan));
  });
  return programs;
}

llvm::Expected<TransferPrograms>
ucp::planTransfers(llvm::ArrayRef<ParamMap> sources,
                   llvm::ArrayRef<ParamMap> targets,
                   const ReplicaPolicy &policy, int scalePower) {
  MLIRContext context;
  context.loadDialect<UCPDialect>();
  std::string messages;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
      messages += (messages.empty() ? "" : "\n") + diagnostic.str();
    return success();
  });
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> sourceModule = buildMapModule(sources, loc);
  OwningOpRef<ModuleOp> targetModule = buildMapModule(targets, loc);
  FailureOr<TransferPrograms> programs =
      planTransfers(*sourceModule, *targetModule, policy, scalePower);
  if (failed(programs))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), messages);
  return std::move(*programs);
}

OwningOpRef<ModuleOp> ucp::buildMapModule(llvm::ArrayRef<ParamMap> maps,
                                          Location loc) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
  for (const ParamMap &map : maps)
    buildParamOp(builder, loc, map);
  return module;
}

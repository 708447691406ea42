//===- ComposeMaps.cpp - The --ucp-compose pass ---------------------------===//
//
// Loads and verifies the target maps once, when the pass is initialized;
// then pairs the source parameters with them by name and composes each
// verified pair (ucp/Plan/Planner.h), replacing the param op by the plan
// op. Every message is located at the op at fault.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
#include "ucp/Dialect/UCP/IR/MapFileReader.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/Planner.h"

namespace ucp {
#define GEN_PASS_DEF_UCPCOMPOSEPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {

/// The target maps, verified, in module order; shared by the clones of a
/// pass.
struct TargetMaps {
  /// The module read from the `target` option (empty when given in memory).
  OwningOpRef<ModuleOp> owned;
  std::vector<ParamOp> ops;
  std::vector<std::unique_ptr<MapVerification>> verifications;
};

struct UCPComposePass : public ucp::impl::UCPComposePassBase<UCPComposePass> {
  using UCPComposePassBase::UCPComposePassBase;
  UCPComposePass(ModuleOp targetModule, const ReplicaPolicy &policy)
      : givenTargets(targetModule), givenPolicy(policy) {}

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// The policy given in memory, else the options'.
  ReplicaPolicy getPolicy();
  /// Verifies and indexes the target maps of `module`.
  LogicalResult indexTargets(ModuleOp module);
  /// Returns the verified source params, each with its verified target,
  /// or fails after reporting.
  FailureOr<std::vector<
      std::tuple<ParamOp, const MapVerification *, const MapVerification *>>>
  getPairs();

  /// Targets given in memory (not owned) rather than by the option.
  ModuleOp givenTargets;
  std::optional<ReplicaPolicy> givenPolicy;
  std::shared_ptr<TargetMaps> targets;
  ReplicaPolicy replicaPolicy;
};

} // namespace

ReplicaPolicy UCPComposePass::getPolicy() {
  if (givenPolicy)
    return *givenPolicy;
  ReplicaPolicy result;
  result.kind = policy;
  result.ranksPerNode = ranksPerNode;
  return result;
}

LogicalResult UCPComposePass::indexTargets(ModuleOp module) {
  auto maps = std::make_shared<TargetMaps>();
  bool valid = true;
  forEachParam(module, [&](ParamOp param) {
    auto verification = std::make_unique<MapVerification>(param);
    if (failed(verification->emitViolations(param, "target map")))
      valid = false;
    maps->ops.push_back(param);
    maps->verifications.push_back(std::move(verification));
  });
  if (!valid)
    return failure();
  targets = std::move(maps);
  return success();
}

LogicalResult UCPComposePass::initialize(MLIRContext *context) {
  replicaPolicy = getPolicy();
  if (targets)
    return success();
  if (givenTargets)
    return indexTargets(givenTargets);
  if (target.empty())
    return emitError(UnknownLoc::get(context))
           << "--ucp-compose needs target=FILE, the target map";
  MapFileReader reader = getMapFileReader();
  if (!reader)
    return emitError(UnknownLoc::get(context))
           << "--ucp-compose target=" << target
           << ": this tool reads no map files (it must call "
              "ucp::registerMapFileReader(), of UCPMapTranslation)";
  OwningOpRef<ModuleOp> module = reader(target, context);
  if (!module || failed(indexTargets(*module)))
    return failure();
  targets->owned = std::move(module);
  return success();
}

FailureOr<std::vector<
    std::tuple<ParamOp, const MapVerification *, const MapVerification *>>>
UCPComposePass::getPairs() {
  std::vector<ParamOp> sources;
  std::vector<const MapVerification *> verifications;
  bool valid = true;
  for (auto [param, verification] :
       getMapVerifications(getAnalysisManager(), getOperation())) {
    if (failed(verification->emitViolations(param)))
      valid = false;
    sources.push_back(param);
    verifications.push_back(verification);
  }
  std::vector<llvm::StringRef> sourceNames, targetNames;
  for (ParamOp param : sources)
    sourceNames.push_back(param.getSymName());
  for (ParamOp param : targets->ops)
    targetNames.push_back(param.getSymName());
  // A target is located in another file: its message is, without the note
  // that would print the whole map.
  std::optional<std::vector<size_t>> pairs =
      pairNames(sourceNames, targetNames, {},
                [&](PlanSide side, size_t index, const std::string &message) {
                  if (side == PlanSide::Source)
                    sources[index].emitError(message);
                  else
                    emitError(targets->ops[index].getLoc()) << message;
                });
  if (!valid || !pairs)
    return failure();
  std::vector<
      std::tuple<ParamOp, const MapVerification *, const MapVerification *>>
      result;
  for (auto [param, verification, target] :
       llvm::zip_equal(sources, verifications, *pairs))
    result.emplace_back(param, verification,
                        targets->verifications[target].get());
  return result;
}

void UCPComposePass::runOnOperation() {
  auto pairs = getPairs();
  if (failed(pairs))
    return signalPassFailure();
  SentElements sent;
  for (auto [param, source, target] : *pairs) {
    llvm::Expected<TransferPlan> plan =
        composeMaps(source->getMap(), target->getMap(), replicaPolicy, sent);
    if (!plan) {
      param.emitError(llvm::toString(plan.takeError()));
      return signalPassFailure();
    }
    OpBuilder builder(param);
    buildPlanOp(builder, param.getLoc(), *plan);
    param.erase();
  }
}

std::unique_ptr<Pass> ucp::createUCPComposePass(ModuleOp targets,
                                                const ReplicaPolicy &policy) {
  return std::make_unique<UCPComposePass>(targets, policy);
}

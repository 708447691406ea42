//===- ComposeMaps.cpp - The --ucp-compose pass ---------------------------===//
//
// Loads and verifies the target maps once, when the pass is initialized;
// then composes each verified source parameter with its target counterpart
// (ucp/Plan/Compose.h) and replaces the param op by the plan op.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Analysis/MapVerification.h"
#include "ucp/Dialect/UCP/IR/MapFileReader.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Plan/Compose.h"

#include "llvm/ADT/StringMap.h"

namespace ucp {
#define GEN_PASS_DEF_UCPCOMPOSEPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {

/// The target maps, verified, by name; shared by the clones of a pass.
struct TargetMaps {
  /// The module read from the `target` option (empty when given in memory).
  OwningOpRef<ModuleOp> owned;
  llvm::StringMap<std::unique_ptr<MapVerification>> byName;
};

struct UCPComposePass : public ucp::impl::UCPComposePassBase<UCPComposePass> {
  using UCPComposePassBase::UCPComposePassBase;
  UCPComposePass(ModuleOp targetModule, const ReplicaPolicy &policy)
      : givenTargets(targetModule), givenPolicy(policy) {}

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// Reads the policy options.
  FailureOr<ReplicaPolicy> getPolicy(MLIRContext *context);
  /// Verifies and indexes the target maps of `module`.
  LogicalResult indexTargets(ModuleOp module);
  /// Returns the verified source params by name, or fails after reporting.
  FailureOr<std::vector<std::pair<ParamOp, const MapVerification *>>>
  getSources();

  /// Targets given in memory (not owned) rather than by the option.
  ModuleOp givenTargets;
  std::optional<ReplicaPolicy> givenPolicy;
  std::shared_ptr<TargetMaps> targets;
  ReplicaPolicy replicaPolicy;
};

} // namespace

FailureOr<ReplicaPolicy> UCPComposePass::getPolicy(MLIRContext *context) {
  if (givenPolicy)
    return *givenPolicy;
  ReplicaPolicy result;
  result.ranksPerNode = ranksPerNode;
  if (std::optional<ReplicaPolicy::Kind> kind = parseReplicaPolicyKind(policy))
    result.kind = *kind;
  else
    return emitError(UnknownLoc::get(context))
           << "unknown replica policy '" << policy
           << "'; expected lowest, local, node or balance";
  return result;
}

LogicalResult UCPComposePass::indexTargets(ModuleOp module) {
  auto maps = std::make_shared<TargetMaps>();
  bool valid = true;
  forEachParam(module, [&](ParamOp param) {
    auto verification = std::make_unique<MapVerification>(param);
    if (failed(verification->emitViolations(param, "target map")))
      valid = false;
    auto [it, inserted] =
        maps->byName.try_emplace(param.getSymName(), std::move(verification));
    if (!inserted) {
      param.emitError("target map: parameter '")
          << param.getSymName() << "' is described twice";
      valid = false;
    }
  });
  if (!valid)
    return failure();
  targets = std::move(maps);
  return success();
}

LogicalResult UCPComposePass::initialize(MLIRContext *context) {
  FailureOr<ReplicaPolicy> chosen = getPolicy(context);
  if (failed(chosen))
    return failure();
  replicaPolicy = *chosen;
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

FailureOr<std::vector<std::pair<ParamOp, const MapVerification *>>>
UCPComposePass::getSources() {
  std::vector<std::pair<ParamOp, const MapVerification *>> sources;
  llvm::StringMap<ParamOp> seen;
  bool valid = true;
  forEachParam(getOperation(), [&](ParamOp param) {
    const MapVerification &verification =
        getMapVerification(getAnalysisManager(), getOperation(), param);
    if (failed(verification.emitViolations(param)))
      valid = false;
    if (!seen.try_emplace(param.getSymName(), param).second) {
      param.emitError("parameter '")
          << param.getSymName() << "' is described twice in the source";
      valid = false;
    }
    if (!targets->byName.count(param.getSymName())) {
      param.emitError("parameter '")
          << param.getSymName()
          << "' is in the source map but not in the target map";
      valid = false;
    }
    sources.emplace_back(param, &verification);
  });
  for (const auto &entry : targets->byName)
    if (!seen.count(entry.getKey())) {
      // About the whole input: at its location, without the note that
      // would print every map in it.
      emitError(getOperation()->getLoc())
          << "parameter '" << entry.getKey()
          << "' is in the target map but not in the source map";
      valid = false;
    }
  if (!valid)
    return failure();
  return sources;
}

void UCPComposePass::runOnOperation() {
  if (isa<ParamOp>(getOperation())) {
    getOperation()->emitError("--ucp-compose replaces the params it composes, "
                              "so it runs on the op holding them (a module)");
    return signalPassFailure();
  }
  FailureOr<std::vector<std::pair<ParamOp, const MapVerification *>>> sources =
      getSources();
  if (failed(sources))
    return signalPassFailure();
  SentElements sent;
  for (auto [param, verification] : *sources) {
    const MapVerification &target = *targets->byName.at(param.getSymName());
    llvm::Expected<TransferPlan> plan = composeMaps(
        verification->getMap(), target.getMap(), replicaPolicy, sent);
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

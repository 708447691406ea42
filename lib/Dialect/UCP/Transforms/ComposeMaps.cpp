//===- ComposeMaps.cpp - The --ucp-compose pass ---------------------------===//
//
// Loads the target maps, composes each source parameter with its target
// counterpart (ucp/Plan/Compose.h) and replaces the param op by the plan op.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/IO/MapTranslation.h"
#include "ucp/Plan/Compose.h"

#include <set>

namespace ucp {
#define GEN_PASS_DEF_UCPCOMPOSEPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {

struct UCPComposePass : public ucp::impl::UCPComposePassBase<UCPComposePass> {
  using UCPComposePassBase::UCPComposePassBase;
  void runOnOperation() override;

private:
  /// An error about the whole module, at its location but without the note
  /// that prints the operation: for a module, that is every map in it.
  InFlightDiagnostic emitModuleError() {
    return mlir::emitError(getOperation().getLoc());
  }
  /// Reads the target maps, by name.
  FailureOr<std::map<std::string, ParamMap>> loadTargets();
};

} // namespace

FailureOr<std::map<std::string, ParamMap>> UCPComposePass::loadTargets() {
  ModuleOp module = getOperation();
  if (target.empty()) {
    emitModuleError() << "--ucp-compose needs target=FILE, the target map";
    return failure();
  }
  llvm::Expected<std::vector<ParamMap>> maps =
      readMapFile(target, module.getContext());
  if (!maps) {
    emitModuleError() << llvm::toString(maps.takeError());
    return failure();
  }
  std::map<std::string, ParamMap> byName;
  for (ParamMap &map : *maps)
    byName.emplace(map.name, std::move(map));
  return byName;
}

void UCPComposePass::runOnOperation() {
  ReplicaPolicy replicaPolicy;
  if (policy == "lowest")
    replicaPolicy.kind = ReplicaPolicy::Lowest;
  else if (policy == "local")
    replicaPolicy.kind = ReplicaPolicy::Local;
  else if (policy == "node")
    replicaPolicy.kind = ReplicaPolicy::Node;
  else if (policy == "balance")
    replicaPolicy.kind = ReplicaPolicy::Balance;
  else {
    emitModuleError() << "unknown replica policy '" << policy
                      << "'; expected lowest, local, node or balance";
    return signalPassFailure();
  }
  replicaPolicy.ranksPerNode = ranksPerNode;

  FailureOr<std::map<std::string, ParamMap>> targets = loadTargets();
  if (failed(targets))
    return signalPassFailure();

  // Both sides must describe the same parameters.
  bool mismatched = false;
  std::set<std::string> sourceNames;
  for (ParamOp param : getOperation().getOps<ParamOp>()) {
    sourceNames.insert(param.getSymName().str());
    if (!targets->count(param.getSymName().str())) {
      param.emitError("parameter '")
          << param.getSymName()
          << "' is in the source map but not in the target map";
      mismatched = true;
    }
  }
  for (const auto &[name, map] : *targets) {
    if (!sourceNames.count(name)) {
      emitModuleError() << "parameter '" << name
                        << "' is in the target map but not in the source map";
      mismatched = true;
    }
  }
  if (mismatched)
    return signalPassFailure();

  SentElements sent;
  for (ParamOp param :
       llvm::make_early_inc_range(getOperation().getOps<ParamOp>())) {
    llvm::Expected<TransferPlan> plan =
        composeMaps(toParamMap(param), targets->at(param.getSymName().str()),
                    replicaPolicy, sent);
    if (!plan) {
      param.emitError(llvm::toString(plan.takeError()));
      return signalPassFailure();
    }
    OpBuilder builder(param);
    buildPlanOp(builder, param.getLoc(), *plan);
    param.erase();
  }
}

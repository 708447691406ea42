//===- Planner.cpp - The one planner: verify, compose, lower --------------===//

#include "ucp/Plan/Planner.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringMap.h"

using namespace ucp;

std::optional<std::vector<size_t>> ucp::pairNames(
    llvm::ArrayRef<llvm::StringRef> sources,
    llvm::ArrayRef<llvm::StringRef> targets, const PlanSides &sides,
    llvm::function_ref<void(PlanSide, size_t, const std::string &)> report) {
  bool paired = true;
  auto fail = [&](PlanSide side, size_t index, const llvm::Twine &message) {
    report(side, index, message.str());
    paired = false;
  };
  llvm::StringMap<size_t> targetIndex;
  for (auto [i, name] : llvm::enumerate(targets))
    if (!targetIndex.try_emplace(name, i).second)
      fail(PlanSide::Target, i,
           "parameter '" + name + "' is described twice in the " +
               sides.target);
  llvm::StringMap<size_t> sourceIndex;
  std::vector<size_t> pairs;
  for (auto [i, name] : llvm::enumerate(sources)) {
    if (!sourceIndex.try_emplace(name, i).second)
      fail(PlanSide::Source, i,
           "parameter '" + name + "' is described twice in the " +
               sides.source);
    auto found = targetIndex.find(name);
    if (found == targetIndex.end()) {
      fail(PlanSide::Source, i,
           "parameter '" + name + "' is in the " + sides.source +
               " but not in the " + sides.target);
      continue;
    }
    pairs.push_back(found->second);
  }
  for (auto [i, name] : llvm::enumerate(targets))
    if (!sourceIndex.count(name) && targetIndex.lookup(name) == i)
      fail(PlanSide::Target, i,
           "parameter '" + name + "' is in the " + sides.target +
               " but not in the " + sides.source);
  if (!paired)
    return std::nullopt;
  return pairs;
}

llvm::Expected<TransferPlan> ucp::planParam(const ParamMap &source,
                                            const ParamMap &target,
                                            const ReplicaPolicy &policy,
                                            SentElements &sent,
                                            const PlanSides &sides) {
  if (llvm::Error error = checkParamMap(source))
    return makeError(sides.sourcePrefix, llvm::toString(std::move(error)));
  if (llvm::Error error = checkParamMap(target))
    return makeError(sides.targetPrefix, llvm::toString(std::move(error)));
  return composeMaps(source, target, policy, sent);
}

llvm::Expected<std::vector<TransferPlan>>
ucp::composeTransfers(llvm::ArrayRef<ParamMap> sources,
                      llvm::ArrayRef<ParamMap> targets,
                      const ReplicaPolicy &policy, const PlanSides &sides) {
  std::vector<llvm::StringRef> sourceNames, targetNames;
  for (const ParamMap &map : sources)
    sourceNames.push_back(map.name);
  for (const ParamMap &map : targets)
    targetNames.push_back(map.name);
  std::string problems;
  std::optional<std::vector<size_t>> pairs =
      pairNames(sourceNames, targetNames, sides,
                [&](PlanSide, size_t, const std::string &message) {
                  problems += (problems.empty() ? "" : "\n") + message;
                });
  if (!pairs)
    return makeError(problems);
  std::vector<TransferPlan> plans;
  plans.reserve(sources.size());
  SentElements sent;
  for (auto [source, target] : llvm::zip_equal(sources, *pairs)) {
    llvm::Expected<TransferPlan> plan =
        planParam(source, targets[target], policy, sent, sides);
    if (!plan)
      return plan.takeError();
    plans.push_back(std::move(*plan));
  }
  return plans;
}

llvm::Expected<TransferPrograms>
ucp::planTransfers(llvm::ArrayRef<ParamMap> sources,
                   llvm::ArrayRef<ParamMap> targets,
                   const ReplicaPolicy &policy, const PlanSides &sides) {
  llvm::Expected<std::vector<TransferPlan>> plans =
      composeTransfers(sources, targets, policy, sides);
  if (!plans)
    return plans.takeError();
  TransferPrograms programs;
  for (const TransferPlan &plan : *plans)
    programs.emplace(plan.name, lowerPlan(plan));
  return programs;
}

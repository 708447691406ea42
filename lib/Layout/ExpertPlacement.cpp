//===- ExpertPlacement.cpp - AutoEP expert placement as a map -------------===//

#include "ucp/Layout/ExpertPlacement.h"
#include "ucp/Layout/BlockLayout.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/MathExtras.h"

#include <set>

using namespace ucp;

static llvm::Error refuse(const llvm::Twine &why) {
  return makeError("expert placement: " + why.str());
}

llvm::Expected<ExpertPlacement>
ucp::getUniformExpertPlacement(int64_t numExperts, int64_t localExperts,
                               int64_t epSize) {
  if (std::string error = checkWorldSize(epSize, "ep_size"); !error.empty())
    return refuse(error);
  int64_t experts = 0;
  if (localExperts <= 0 || llvm::MulOverflow(localExperts, epSize, experts) ||
      experts != numExperts)
    return refuse("a uniform layout needs num_local_experts * ep_size == "
                  "num_experts, got " +
                  std::to_string(localExperts) + " * " +
                  std::to_string(epSize) + " != " + std::to_string(numExperts));
  ExpertPlacement placement{numExperts, epSize, {}};
  for (int64_t r = 0; r < epSize; ++r) {
    std::vector<int64_t> &mine = placement.experts.emplace_back();
    for (int64_t e = 0; e < localExperts; ++e)
      mine.push_back(r * localExperts + e);
  }
  return placement;
}

llvm::Error ucp::validateExpertPlacement(const ExpertPlacement &placement) {
  if (placement.numExperts <= 0)
    return refuse("num_experts must be positive, got " +
                  std::to_string(placement.numExperts));
  if (std::string error = checkWorldSize(placement.epSize, "ep_size");
      !error.empty())
    return refuse(error);
  if (static_cast<int64_t>(placement.experts.size()) != placement.epSize)
    return refuse("ep_size is " + std::to_string(placement.epSize) + " but " +
                  std::to_string(placement.experts.size()) +
                  " ranks are described");
  // The IDs held, not a flag per expert: num_experts is the document's
  // word, and memory must not follow it.
  std::vector<int64_t> held;
  for (auto [rank, experts] : llvm::enumerate(placement.experts)) {
    std::set<int64_t> seen;
    for (int64_t id : experts) {
      if (id < 0 || id >= placement.numExperts)
        return refuse("rank " + std::to_string(rank) + " holds expert " +
                      std::to_string(id) + ", outside [0, " +
                      std::to_string(placement.numExperts) + ")");
      if (!seen.insert(id).second)
        return refuse("rank " + std::to_string(rank) + " lists expert " +
                      std::to_string(id) + " twice");
      held.push_back(id);
    }
  }
  // Sorted and unique, the IDs cover [0, num_experts) where the i-th is i.
  llvm::sort(held);
  held.erase(std::unique(held.begin(), held.end()), held.end());
  for (int64_t id = 0; id < placement.numExperts; ++id)
    if (id >= static_cast<int64_t>(held.size()) || held[id] != id)
      return refuse("the ranks do not cover global expert IDs: expert " +
                    std::to_string(id) + " is held by no rank");
  return llvm::Error::success();
}

llvm::Expected<ParamMap>
ucp::buildExpertLayout(llvm::StringRef name, const ExpertPlacement &placement,
                       llvm::ArrayRef<int64_t> expertShape) {
  if (llvm::Error error = validateExpertPlacement(placement))
    return std::move(error);
  Extents shape = {placement.numExperts};
  shape.append(expertShape.begin(), expertShape.end());
  if (llvm::Error error = checkLayoutInputs(name, shape, placement.epSize))
    return std::move(error);
  std::vector<std::vector<IndexRun>> runs;
  for (const std::vector<int64_t> &experts : placement.experts) {
    std::vector<IndexRun> &mine = runs.emplace_back();
    for (int64_t id : experts)
      mine.push_back({id, 1});
  }
  return buildBlockLayout(name, shape, 0, runs);
}

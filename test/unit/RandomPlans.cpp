//===- RandomPlans.cpp - Random plans for executor tests ------------------===//

#include "RandomPlans.h"
#include "RandomMaps.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/CopyProgram.h"

using namespace ucp;
using namespace ucp::testing;

std::vector<TransferPlan>
ucp::testing::makeExecutionPlans(std::mt19937_64 &rng, DType type, int count) {
  std::vector<double> scales = {1.0};
  if (isFloatingPoint(type))
    scales = {1.0, 1.0, 0.5, 0.25, 3.0};
  // Small extents, and multiples of 16 bytes for the vector path.
  const int64_t extents[] = {1, 2, 3, 5, 7, 8, 16, 32};
  std::vector<TransferPlan> plans;
  SentElements sent;
  for (int i = 0; i < count; ++i) {
    Extents shape;
    for (int64_t d = 0, rank = 1 + rng() % 3; d < rank; ++d)
      shape.push_back(extents[rng() % std::size(extents)]);
    ParamMap source = makeRandomMapOf(rng, shape, 5, scales);
    ParamMap target = makeRandomMapOf(rng, shape, 5, scales);
    ParamMap full = getFullTensorMap(source);
    switch (i % 3) {
    case 0:
      plans.push_back(*composeMaps(source, target, {}, sent));
      break;
    case 1:
      plans.push_back(*composeMaps(full, source, {}, sent));
      break;
    default:
      plans.push_back(*composeMaps(source, full, {}, sent));
      break;
    }
  }
  plans.push_back(*composeMaps(
      llvm::cantFail(buildPaddedVocabLayout("embed", 13, 16, 4)),
      llvm::cantFail(buildPaddedVocabLayout("embed", 13, 16, 2)), {}, sent));
  ParamMap columns = *buildSplitLayout("w", {8, 64}, 1, {16, 16, 16, 16});
  ParamMap rows = *buildSplitLayout("w", {8, 64}, 0, {4, 4});
  plans.push_back(*composeMaps(getFullTensorMap(columns), columns, {}, sent));
  plans.push_back(*composeMaps(columns, rows, {}, sent));
  plans.push_back(makeDeepPlan(10));
  return plans;
}

TransferPlan ucp::testing::makeDeepPlan(size_t rank) {
  // Extents 2 and 3 alternate, so that reversing the strides of one side
  // makes every dimension non-contiguous on one side or the other.
  Extents shape;
  for (size_t d = 0; d < rank; ++d)
    shape.push_back(d % 2 ? 3 : 2);
  Extents strides = getRowMajorStrides(shape);
  int64_t elements = *getNumElements(shape);
  // The transpose: target element (i_0 .. i_n) is source (i_n .. i_0).
  Extents reversed(shape.rbegin(), shape.rend());
  Extents reversedStrides = getRowMajorStrides(reversed);
  Extents transposed(reversedStrides.rbegin(), reversedStrides.rend());
  TransferPlan plan;
  plan.name = "deep";
  plan.sourceShards[0] = {elements};
  plan.targetShards[0] = {2 * elements};
  plan.segments.push_back({shape, 0, {0, transposed}, 0, {0, strides}, 1.0});
  plan.fills.push_back({0, shape, {elements, strides}});
  return plan;
}

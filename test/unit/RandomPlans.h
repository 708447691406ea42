//===- RandomPlans.h - Random plans for executor tests ----------*- C++ -*-===//
//
// The plans every executor (CPU, generated CUDA on the host, CUDA on a GPU)
// is checked on: random layouts between random world sizes, extracts and
// rebuilds, with scales where the element type is floating point, plus a
// padded vocabulary (fills) and 16-byte aligned splits (vector copies).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TEST_UNIT_RANDOMPLANS_H
#define UCP_TEST_UNIT_RANDOMPLANS_H

#include "ucp/Element/DType.h"
#include "ucp/Plan/TransferPlan.h"

#include <random>

namespace ucp::testing {

/// One element type of each size (1, 2, 4 and 8 bytes): enough where only
/// the size matters; three of them can be scaled.
inline constexpr DType kOneDTypePerSize[] = {DType::U8, DType::BF16, DType::F32,
                                             DType::F64};

/// Returns `count` random plans for elements of `type` followed by the
/// fixed ones (padded vocabulary, column extract, column to row reshard,
/// and makeDeepPlan's).
std::vector<TransferPlan> makeExecutionPlans(std::mt19937_64 &rng, DType type,
                                             int count = 60);

/// Returns a plan whose copy and fill have `rank` dimensions (more than
/// kMaxCopyRank for rank 10) that no merging can reduce: a transpose of a
/// [2, 3, 2, ...] shard into another, and a fill of the other half of the
/// target.
TransferPlan makeDeepPlan(size_t rank);

} // namespace ucp::testing

#endif // UCP_TEST_UNIT_RANDOMPLANS_H

//===- PairsIntoTest.cpp - The copies into one target ---------------------===//
//
// getPairsInto finds a target's pairs by binary search in a program that
// lowerPlan made (pairs in (source, target) order), and by a scan in any
// other: both give exactly the pairs a scan of the whole program finds, in
// program order, on random plans.
//
//===----------------------------------------------------------------------===//

#include "RandomMaps.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/CopyProgram.h"

#include <gtest/gtest.h>

#include <random>

using namespace ucp;
using namespace ucp::testing;

namespace {

std::vector<const BufferPairCopies *> scanPairsInto(const CopyProgram &program,
                                                    int64_t target) {
  std::vector<const BufferPairCopies *> found;
  for (const BufferPairCopies &pair : program.pairs)
    if (pair.targetBuffer == target)
      found.push_back(&pair);
  return found;
}

TEST(PairsInto, BinarySearchFindsWhatAScanFinds) {
  std::mt19937_64 rng(11);
  int searched = 0;
  for (int trial = 0; trial < 300; ++trial) {
    ParamMap source = makeRandomMap(rng, 3, 7, 9);
    ParamMap target = makeRandomMapOf(rng, source.logicalShape, 9, {1.0});
    SentElements sent;
    llvm::Expected<TransferPlan> plan =
        composeMaps(source, target, ReplicaPolicy{}, sent);
    ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
    CopyProgram program = lowerPlan(*plan);
    ASSERT_TRUE(program.pairsSorted);
    CopyProgram unsorted = program;
    unsorted.pairsSorted = false;
    std::shuffle(unsorted.pairs.begin(), unsorted.pairs.end(), rng);
    // Every target rank, and ranks no pair writes.
    for (int64_t rank = -1; rank <= target.worldSize; ++rank) {
      EXPECT_EQ(getPairsInto(program, rank), scanPairsInto(program, rank))
          << "trial " << trial << ", rank " << rank;
      EXPECT_EQ(getPairsInto(unsorted, rank), scanPairsInto(unsorted, rank))
          << "trial " << trial << ", rank " << rank;
      searched += !scanPairsInto(program, rank).empty();
    }
  }
  EXPECT_GT(searched, 300); // The plans wrote targets to find.
}

} // namespace

//===- ContiguousRunsTest.cpp - Programs that only concatenate ------------===//
//
// getContiguousRuns finds the programs whose target is a concatenation of
// contiguous source runs, and those runs, in order, are exactly what the
// executor writes; anything else (a strided view, a scale, a fill, a
// gap) is not taken for one.
//
//===----------------------------------------------------------------------===//

#include "RandomMaps.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Plan/Compose.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace ucp;
using namespace ucp::testing;

namespace {

/// The program rebuilding the full tensor of `map` (one target rank).
CopyProgram getRebuild(const ParamMap &map) {
  SentElements sent;
  llvm::Expected<TransferPlan> plan =
      composeMaps(map, getFullTensorMap(map), ReplicaPolicy{}, sent);
  EXPECT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  return lowerPlan(*plan);
}

/// Checks that the runs of `program`, joined, are what the executor writes.
void expectRunsMatchExecution(const CopyProgram &program,
                              llvm::ArrayRef<ContiguousRun> runs) {
  std::map<int64_t, std::vector<int32_t>> sources;
  ProgramBuffers buffers;
  int32_t next = 1;
  for (const auto &[rank, elements] : program.sourceElements) {
    std::vector<int32_t> &data = sources[rank];
    for (int64_t i = 0; i < elements; ++i)
      data.push_back(next++);
    buffers.sources[rank] = data.data();
  }
  std::vector<int32_t> executed(program.targetElements.at(0), -1);
  buffers.targets[0] = executed.data();
  executeOnCpu({&program, buffers, DType::I32}, 1);
  std::vector<int32_t> joined;
  for (const ContiguousRun &run : runs)
    joined.insert(
        joined.end(), sources[run.sourceBuffer].begin() + run.sourceOffset,
        sources[run.sourceBuffer].begin() + run.sourceOffset + run.elements);
  EXPECT_EQ(joined, executed);
}

} // namespace

TEST(ContiguousRuns, RowSplitsAreConcatenationsInOrder) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t rows = 1 + rng() % 40, cols = 1 + rng() % 40;
    int64_t ranks = 1 + rng() % 5;
    Extents sizes = splitEvenly(rows, ranks);
    // Shuffled so that the ranks hold the rows out of rank order.
    ParamMap map = makeSplitMap("w", {rows, cols}, 0, sizes);
    std::shuffle(map.shards.begin(), map.shards.end(), rng);
    for (size_t r = 0; r < map.shards.size(); ++r)
      map.shards[r].rank = r;
    CopyProgram program = getRebuild(map);
    std::optional<std::vector<ContiguousRun>> runs =
        getContiguousRuns(program, 0);
    ASSERT_TRUE(runs.has_value()) << rows << "x" << cols << " on " << ranks;
    expectRunsMatchExecution(program, *runs);
  }
}

TEST(ContiguousRuns, ColumnSplitsScalesAndFillsAreNot) {
  // Columns of a matrix with several rows: strided on the target.
  EXPECT_FALSE(
      getContiguousRuns(getRebuild(makeSplitMap("w", {4, 6}, 1, {3, 3})), 0));
  // One row: a column split is a concatenation after all.
  CopyProgram row = getRebuild(makeSplitMap("w", {1, 6}, 1, {2, 4}));
  std::optional<std::vector<ContiguousRun>> runs = getContiguousRuns(row, 0);
  ASSERT_TRUE(runs.has_value());
  expectRunsMatchExecution(row, *runs);

  CopyProgram program = getRebuild(makeSplitMap("w", {8}, 0, {3, 5}));
  ASSERT_TRUE(getContiguousRuns(program, 0).has_value());
  CopyProgram scaled = program;
  scaled.pairs.front().copies.front().scale = 0.5;
  EXPECT_FALSE(getContiguousRuns(scaled, 0));
  CopyProgram filled = program;
  filled.fills.push_back({0, {1}, {0, {1}}});
  EXPECT_FALSE(getContiguousRuns(filled, 0));
  CopyProgram gap = program;
  gap.pairs.front().copies.front().target.offset += 1;
  EXPECT_FALSE(getContiguousRuns(gap, 0));
  EXPECT_FALSE(getContiguousRuns(program, 1)); // Not its target.
}

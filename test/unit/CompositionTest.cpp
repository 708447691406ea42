//===- CompositionTest.cpp - Transfer plans, checked by execution ---------===//
//
// Every plan is run by a reference interpreter on the source shards of a
// marker tensor and compared with extracting the target map from the full
// tensor: for random layouts, for every layout of the library between every
// pair of degrees in {1, 2, 3, 4, 8} it allows, and for padded vocabularies
// with the source padding poisoned.
//
//===----------------------------------------------------------------------===//

#include "RandomMaps.h"
#include "ucp/Layout/ExpertPlacement.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Compose.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace ucp;
using namespace ucp::testing;

namespace {

constexpr double kFill = -7.0;

/// Shards of `map` extracted from `full`, by rank.
std::map<int64_t, std::vector<double>>
shardsByRank(const ParamMap &map, llvm::ArrayRef<double> full) {
  std::vector<std::vector<double>> shards = extractShards(map, full);
  std::map<int64_t, std::vector<double>> byRank;
  for (size_t i = 0; i < shards.size(); ++i)
    byRank[map.shards[i].rank] = std::move(shards[i]);
  return byRank;
}

/// Bit-exact unless the scales are not powers of two (spec §8.3).
void expectSameData(const std::vector<double> &actual,
                    const std::vector<double> &expected, bool exact,
                    const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (exact)
      ASSERT_EQ(actual[i], expected[i]) << what << " element " << i;
    else
      ASSERT_NEAR(actual[i], expected[i], 1e-9 * (1 + std::fabs(expected[i])))
          << what << " element " << i;
  }
}

/// Composes `source` into `target`, checks the plan's invariants, runs it
/// on marker data and compares with extracting `target` directly. Rows of a
/// padded vocabulary past its real rows are poisoned in the source and
/// expected as fills in the target. Returns the plan.
TransferPlan checkPlan(const ParamMap &source, const ParamMap &target,
                       ReplicaPolicy policy = {}, bool exact = true) {
  SentElements sent;
  llvm::Expected<TransferPlan> plan = composeMaps(source, target, policy, sent);
  if (!plan) {
    ADD_FAILURE() << llvm::toString(plan.takeError());
    return {};
  }
  for (const Segment &segment : plan->segments)
    EXPECT_EQ(checkSegment(segment, plan->sourceShards.at(segment.sourceRank),
                           plan->targetShards.at(segment.targetRank)),
              "");
  for (const Fill &fill : plan->fills)
    EXPECT_EQ(checkFill(fill, plan->targetShards.at(fill.rank)), "");
  std::optional<PlanTilingError> tiling =
      checkPlanTiling(*plan, [](PlanWrite write) {
        return (write.isFill ? "fill #" : "copy #") +
               std::to_string(write.index);
      });
  EXPECT_FALSE(tiling) << tiling->message;

  std::optional<int64_t> valid = source.originalVocabSize
                                     ? source.originalVocabSize
                                     : target.originalVocabSize;
  int64_t rowSize = 1;
  for (size_t d = 1; d < source.logicalShape.size(); ++d)
    rowSize *= source.logicalShape[d];
  auto markers = [&](const ParamMap &map, double padding) {
    std::vector<double> full(*getNumElements(map.logicalShape));
    for (size_t i = 0; i < full.size(); ++i)
      full[i] = valid && static_cast<int64_t>(i) >= *valid * rowSize
                    ? padding
                    : static_cast<double>(i) + 0.25;
    return full;
  };
  std::map<int64_t, std::vector<double>> actual =
      applyPlan(*plan, shardsByRank(source, markers(source, NAN)), kFill);
  std::map<int64_t, std::vector<double>> expected =
      shardsByRank(target, markers(target, kFill));
  for (const auto &[rank, data] : expected)
    expectSameData(actual.at(rank), data, exact,
                   source.name + " target rank " + std::to_string(rank));
  return std::move(*plan);
}

int64_t countSegments(const TransferPlan &plan) { return plan.segments.size(); }

TEST(Composition, RandomLayoutsWithEveryPolicy) {
  std::mt19937_64 rng(31);
  const double powersOfTwo[] = {1.0, 1.0, 0.5, 0.25, 2.0};
  for (int i = 0; i < 600; ++i) {
    Extents shape;
    for (int64_t d = 0, rank = 1 + rng() % 3; d < rank; ++d)
      shape.push_back(1 + rng() % 6);
    ParamMap source = makeRandomMapOf(rng, shape, 6, powersOfTwo);
    ParamMap target = makeRandomMapOf(rng, shape, 6, powersOfTwo);
    for (ReplicaPolicy::Kind kind :
         {ReplicaPolicy::Lowest, ReplicaPolicy::Local, ReplicaPolicy::Node,
          ReplicaPolicy::Balance}) {
      checkPlan(source, target, {kind, 2});
      if (HasFailure())
        return;
    }
  }
}

/// The layouts of the library at degree `tp`, where they allow it.
std::vector<ParamMap> libraryLayouts(int64_t tp) {
  std::vector<ParamMap> maps;
  auto add = [&](llvm::Expected<ParamMap> map) {
    if (map)
      maps.push_back(std::move(*map));
    else
      llvm::consumeError(map.takeError());
  };
  add(buildSplitLayout("rows", {12, 6}, 0, getShardSizes(12, tp)));
  add(buildSplitLayout("cols", {6, 12}, 1, getShardSizes(12, tp)));
  add(buildSplitSubParamLayout("qkv", {48, 4}, 0, {32, 8, 8}, tp,
                               {8, 1, "attn.qkv"}));
  add(buildSplitSubParamLayout("gate_up", {20, 4}, 0, {10, 10}, tp));
  add(llvm::cantFail(buildReplicatedLayout("norm", {6}, tp)));
  maps.push_back(llvm::cantFail(buildScaledBiasLayout("bias", {6}, tp)));
  maps.push_back(llvm::cantFail(buildBigcodeLayout("c_attn", 32, 16, 4, tp)));
  add(buildCodegenLayout("qkv_proj", 96, 4, tp));
  add(buildYuanLayout("v_proj", {64, 4}, 0, tp, 16));
  add(buildYuanLayout("o_proj", {4, 64}, 1, tp, 16));
  maps.push_back(llvm::cantFail(buildPaddedVocabLayout("embed", 13, 3, tp)));
  if (llvm::Expected<ExpertPlacement> experts =
          getUniformExpertPlacement(24, 24 / tp, tp))
    add(buildExpertLayout("experts", *experts, {2, 2}));
  else
    llvm::consumeError(experts.takeError());
  return maps;
}

TEST(Composition, EveryLibraryLayoutBetweenEveryPairOfDegrees) {
  const int64_t degrees[] = {1, 2, 3, 4, 8};
  int pairs = 0;
  for (int64_t from : degrees) {
    for (int64_t to : degrees) {
      std::vector<ParamMap> sources = libraryLayouts(from);
      std::vector<ParamMap> targets = libraryLayouts(to);
      for (const ParamMap &source : sources) {
        for (const ParamMap &target : targets) {
          if (source.name != target.name)
            continue;
          bool exact = source.name != "bias" ||
                       ((from & (from - 1)) == 0 && (to & (to - 1)) == 0);
          checkPlan(source, target, {}, exact);
          if (HasFailure()) {
            ADD_FAILURE() << source.name << " " << from << " -> " << to;
            return;
          }
          ++pairs;
        }
      }
    }
  }
  EXPECT_GT(pairs, 250);
}

TEST(Composition, SegmentCountsStayWithinTheSpec) {
  // codegen 4 -> 8 with 32 kv heads: at most 40, for every hidden size.
  for (int64_t hidden : {32, 64, 128, 256}) {
    TransferPlan plan = checkPlan(*buildCodegenLayout("qkv", hidden, 8, 4),
                                  *buildCodegenLayout("qkv", hidden, 8, 8));
    EXPECT_LE(countSegments(plan), 40) << "hidden " << hidden;
  }
  // bigcode 2 -> 4: at most 7.
  EXPECT_LE(countSegments(
                checkPlan(llvm::cantFail(buildBigcodeLayout("c", 32, 16, 8, 2)),
                          llvm::cantFail(buildBigcodeLayout("c", 32, 16, 8, 4)),
                          {ReplicaPolicy::Lowest})),
            7);
  // Yuan o_proj 4 -> 2: at most 4, whatever the rows.
  for (int64_t rows : {8, 32, 128}) {
    TransferPlan plan = checkPlan(*buildYuanLayout("o", {rows, 32}, 1, 4, 8),
                                  *buildYuanLayout("o", {rows, 32}, 1, 2, 8));
    EXPECT_LE(countSegments(plan), 4) << "rows " << rows;
  }
}

TEST(Composition, VocabularyPaddingIsNeverReadAndIsFilled) {
  for (int64_t vocab : {13, 32, 100, 50257}) {
    for (int64_t from : {1, 2, 4, 8}) {
      for (int64_t to : {1, 2, 4, 8}) {
        TransferPlan plan = checkPlan(
            llvm::cantFail(buildPaddedVocabLayout("embed", vocab, 2, from)),
            llvm::cantFail(buildPaddedVocabLayout("embed", vocab, 2, to)));
        EXPECT_LE(countSegments(plan), from + to)
            << "V " << vocab << " " << from << " -> " << to;
        int64_t padded = (vocab + to - 1) / to * to;
        int64_t filled = 0;
        for (const Fill &fill : plan.fills)
          filled += *getNumElements(fill.shape);
        EXPECT_EQ(filled, (padded - vocab) * 2);
        if (HasFailure())
          return;
      }
    }
  }
}

TEST(Composition, IdentityIsLocal) {
  for (const ParamMap &map : libraryLayouts(4)) {
    TransferPlan plan = checkPlan(map, map);
    int64_t pieces = 0;
    for (const Shard &shard : map.shards)
      pieces += shard.pieces.size();
    EXPECT_LE(countSegments(plan), pieces) << map.name;
    for (const Segment &segment : plan.segments)
      EXPECT_EQ(segment.sourceRank, segment.targetRank) << map.name;
    // Only a padded vocabulary fills (its padding rows).
    EXPECT_EQ(plan.fills.empty(), !map.originalVocabSize) << map.name;
  }
}

using Readers = std::map<int64_t, int64_t>;

/// The source rank each target rank reads under `policy`, when F = [64] is
/// held whole by source ranks 1 and 2 and the target splits it four ways.
Readers getReadersOfReplicatedData(const ReplicaPolicy &policy) {
  ParamMap source = llvm::cantFail(buildReplicatedLayout("norm", {64}, 4));
  source.shards = {source.shards[1], source.shards[2]};
  for (Shard &shard : source.shards)
    shard.pieces[0].locations = {1, 2};
  ParamMap target = *buildSplitLayout("norm", {64}, 0, {16, 16, 16, 16});
  Readers reader;
  for (const Segment &s : checkPlan(source, target, policy).segments)
    reader[s.targetRank] = s.sourceRank;
  return reader;
}

TEST(Composition, PoliciesChooseDifferentHoldersOfReplicatedData) {
  auto readerOf = getReadersOfReplicatedData;
  EXPECT_EQ(readerOf({ReplicaPolicy::Lowest}),
            (Readers{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
  EXPECT_EQ(readerOf({ReplicaPolicy::Local}),
            (Readers{{0, 1}, {1, 1}, {2, 2}, {3, 1}}));
  // Two ranks per node: target rank 3 shares node 1 with source rank 2.
  EXPECT_EQ(readerOf({ReplicaPolicy::Node, 2}),
            (Readers{{0, 1}, {1, 1}, {2, 2}, {3, 2}}));
  EXPECT_EQ(readerOf({ReplicaPolicy::Balance}),
            (Readers{{0, 1}, {1, 2}, {2, 1}, {3, 2}}));
}

TEST(Composition, PoliciesAcrossProcessesCountOnlyWhatLeavesAProcess) {
  // Source rank 1 lives on process 0, rank 2 on process 1; target ranks
  // 0 and 1 on process 1, ranks 2 and 3 on process 2.
  auto readerOf = [](ReplicaPolicy::Kind kind) {
    ReplicaPolicy policy{kind};
    policy.sourceProcesses = {0, 0, 1, 1};
    policy.targetProcesses = {1, 1, 2, 2};
    return getReadersOfReplicatedData(policy);
  };
  // Local: rank 2 shares process 1 with target ranks 0 and 1.
  EXPECT_EQ(readerOf(ReplicaPolicy::Local),
            (Readers{{0, 2}, {1, 2}, {2, 1}, {3, 1}}));
  // Balance: the local copies cost nothing, so process 1 has sent nothing
  // when target rank 3 is planned and process 0 has sent 16 elements.
  EXPECT_EQ(readerOf(ReplicaPolicy::Balance),
            (Readers{{0, 2}, {1, 2}, {2, 1}, {3, 2}}));
}

TEST(Composition, MismatchedShapesAreRefused) {
  SentElements sent;
  llvm::Expected<TransferPlan> plan = composeMaps(
      llvm::cantFail(buildReplicatedLayout("w", {4, 2}, 2)),
      llvm::cantFail(buildReplicatedLayout("w", {2, 4}, 2)), {}, sent);
  ASSERT_FALSE(static_cast<bool>(plan));
  EXPECT_EQ(llvm::toString(plan.takeError()),
            "parameter 'w': the source's logical shape [4, 2] differs from "
            "the target's [2, 4]");
}

} // namespace

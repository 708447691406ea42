//===- PipelineLayoutTest.cpp - A PipelineModule's stages and names -------===//
//
// getUniformPartition against DeepSpeed's partition_uniform written as
// DeepSpeed writes it (a range of chunks, then one more layer for each of
// the first stages); orderStageParams on a stage with two tied modules and
// layers given out of order; placeOnStages on random maps placed on random
// sets of stages: the placement verifies, each stage's ranks hold what the
// stage map's do, and getStageMap gives the stage map back.
//
//===----------------------------------------------------------------------===//

#include "ucp/DeepSpeed/PipelineLayout.h"
#include "RandomMaps.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Canonical/LocationAssignment.h"
#include "ucp/Map/Indexing.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace ucp;
using namespace ucp::testing;

namespace {

/// partition_uniform as DeepSpeed computes it.
std::vector<int64_t> referencePartition(int64_t items, int64_t parts) {
  std::vector<int64_t> bounds(parts + 1);
  if (items <= parts) {
    for (int64_t p = 0; p <= parts; ++p)
      bounds[p] = std::min(p, items);
    return bounds;
  }
  int64_t chunk = items / parts, residual = items - chunk * parts;
  for (int64_t p = 0; p <= parts; ++p)
    bounds[p] = p * chunk;
  for (int64_t i = 0; i < residual; ++i)
    for (int64_t p = i + 1; p <= parts; ++p)
      ++bounds[p];
  return bounds;
}

/// Each rank's shard of `map` filled from `full` (empty without one).
std::vector<std::vector<double>> byRank(const ParamMap &map,
                                        llvm::ArrayRef<double> full) {
  std::vector<std::vector<double>> shards = extractShards(map, full);
  std::vector<std::vector<double>> ranks(map.worldSize);
  for (auto [shard, data] : llvm::zip(map.shards, shards))
    ranks[shard.rank] = std::move(data);
  return ranks;
}

TEST(PipelineLayoutTest, UniformPartitionIsDeepSpeeds) {
  for (int64_t layers = 1; layers <= 40; ++layers)
    for (int64_t stages = 1; stages <= 12; ++stages)
      EXPECT_EQ(getUniformPartition(layers, stages),
                referencePartition(layers, stages))
          << layers << " layers, " << stages << " stages";
  EXPECT_EQ(getUniformPartition(7, 2), (std::vector<int64_t>{0, 4, 7}));
}

TEST(PipelineLayoutTest, PartitionsAreReadOrRefused) {
  llvm::Expected<std::vector<int64_t>> parts =
      parsePipelinePartition("0,2,5,7", 3);
  ASSERT_TRUE(static_cast<bool>(parts));
  EXPECT_EQ(*parts, (std::vector<int64_t>{0, 2, 5, 7}));
  parts = parsePipelinePartition("uniform:7", 2);
  ASSERT_TRUE(static_cast<bool>(parts));
  EXPECT_EQ(*parts, (std::vector<int64_t>{0, 4, 7}));
  for (const char *bad : {"0,2,2,7", "1,2,5,7", "0,2,5", "0,x,5,7",
                          "uniform:2", "uniform:", "0,-2,5,7"})
    EXPECT_FALSE(static_cast<bool>(parsePipelinePartition(bad, 3)))
        << bad;
  EXPECT_EQ(getStageOfLayer({0, 4, 7}, 3), 0);
  EXPECT_EQ(getStageOfLayer({0, 4, 7}, 4), 1);
  EXPECT_EQ(getStageOfLayer({0, 4, 7}, 7), std::nullopt);
}

TEST(PipelineLayoutTest, StagesListTiedModulesFirstThenLayers) {
  // Key "head" first used at layer 3, "embed" at layer 5 on this stage.
  std::vector<std::string> names = {
      "4.fc.weight", "tied_modules.embed.weight", "3.ln.weight",
      "3.fc.weight", "tied_modules.head.weight",  "tied_modules.head.bias",
      "12.w"};
  auto firstUse = [](llvm::StringRef key) -> int64_t {
    return key == "head" ? 3 : 5;
  };
  std::vector<size_t> order = orderStageParams(names, firstUse);
  std::vector<std::string> ordered;
  for (size_t i : order)
    ordered.push_back(names[i]);
  EXPECT_EQ(ordered, (std::vector<std::string>{
                         "tied_modules.head.weight", "tied_modules.head.bias",
                         "tied_modules.embed.weight", "3.ln.weight",
                         "3.fc.weight", "4.fc.weight", "12.w"}));
}

/// `keys` ordered by orderModuleKeys, each of group `groups[i]`.
static std::vector<std::string>
orderKeys(const std::vector<std::string> &keys,
          const std::vector<size_t> &groups) {
  std::vector<std::string> ordered;
  for (size_t i : orderModuleKeys(keys, groups))
    ordered.push_back(keys[i]);
  return ordered;
}

TEST(PipelineLayoutTest, ModuleKeysFollowRegistrationOrder) {
  // A transformer block as a stage's two groups list it (>= 2-D weights,
  // then the rest): its state_dict order comes back.
  EXPECT_EQ(orderKeys({"fc1.weight", "fc2.weight", "ln.weight", "ln.bias",
                       "fc1.bias", "fc2.bias"},
                      {0, 0, 1, 1, 1, 1}),
            (std::vector<std::string>{"ln.weight", "ln.bias", "fc1.weight",
                                      "fc1.bias", "fc2.weight", "fc2.bias"}));
  // Nested submodules, the second group ordering one the first does not
  // list, and a key of the module itself.
  EXPECT_EQ(orderKeys({"attn.q.weight", "attn.o.weight", "mlp.up.weight",
                       "scale", "attn.q.bias", "attn.k.bias", "attn.o.bias",
                       "mlp.up.bias"},
                      {0, 0, 0, 0, 1, 1, 1, 1}),
            (std::vector<std::string>{"attn.q.weight", "attn.q.bias",
                                      "attn.k.bias", "attn.o.weight",
                                      "attn.o.bias", "mlp.up.weight",
                                      "mlp.up.bias", "scale"}));
  // One group, or groups that disagree: the order given, by submodule.
  EXPECT_EQ(orderKeys({"weight"}, {0}), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(orderKeys({"a.w", "b.w", "b.x", "a.x"}, {0, 0, 1, 1}),
            (std::vector<std::string>{"a.w", "a.x", "b.w", "b.x"}));
}

TEST(PipelineLayoutTest, PlacedMapsVerifyAndComeBack) {
  std::mt19937_64 rng(32);
  for (int trial = 0; trial < 200; ++trial) {
    // A stage map with its locations as assignLocations gives them.
    llvm::Expected<ParamMap> stageMap =
        assignLocations(makeRandomMap(rng, 3, 6, 4));
    ASSERT_TRUE(static_cast<bool>(stageMap));
    int64_t tp = stageMap->worldSize, pp = 1 + rng() % 4;
    std::vector<int64_t> stages;
    for (int64_t s = 0; s < pp; ++s)
      if (rng() % 2)
        stages.push_back(s);
    if (stages.empty())
      stages.push_back(rng() % pp);
    llvm::Expected<ParamMap> placed = placeOnStages(*stageMap, stages, tp, pp);
    ASSERT_TRUE(static_cast<bool>(placed));
    EXPECT_EQ(placed->worldSize, pp * tp);
    VerifyReport report = verifyParamMap(*placed);
    EXPECT_TRUE(report.ok()) << "trial " << trial;
    int64_t elements = *getNumElements(stageMap->logicalShape);
    std::vector<double> full(elements);
    std::iota(full.begin(), full.end(), 1.0);
    std::vector<std::vector<double>> want = byRank(*stageMap, full);
    std::vector<std::vector<double>> got = byRank(*placed, full);
    for (int64_t s = 0; s < pp; ++s) {
      bool holds = llvm::is_contained(stages, s);
      for (int64_t t = 0; t < tp; ++t) {
        if (holds) {
          EXPECT_EQ(got[s * tp + t], want[t]) << "trial " << trial;
        } else {
          EXPECT_TRUE(got[s * tp + t].empty()) << "trial " << trial;
        }
      }
      if (holds) {
        EXPECT_EQ(getStageMap(*placed, s, tp), *stageMap) << "trial " << trial;
      }
    }
  }
}

} // namespace

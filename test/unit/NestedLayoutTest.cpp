//===- NestedLayoutTest.cpp - Maps of shards sharded again ----------------===//
//
// nestShardMaps on random outer maps (uneven splits, replication, scales,
// permuted and flattened pieces) with ZeRO's flat fragments and with other
// inner maps: the composite verifies, every grid rank holds exactly what
// its inner shard takes of its outer shard (values, scales included), and
// places every element where the two index maps, composed element by
// element, put it. assignLocations recovers the locations of random maps.
//
//===----------------------------------------------------------------------===//

#include "ucp/Layout/NestedLayout.h"
#include "RandomMaps.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Canonical/IndexMapDerivation.h"
#include "ucp/Canonical/LocationAssignment.h"
#include "ucp/Map/Indexing.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace ucp;
using namespace ucp::testing;

namespace {

/// Random fragment sizes of `elements` over `world` ranks, zeros included.
Extents randomSizes(std::mt19937_64 &rng, int64_t elements, int64_t world) {
  Extents cuts = {0, elements};
  for (int64_t i = 1; i < world; ++i)
    cuts.push_back(std::uniform_int_distribution<int64_t>(0, elements)(rng));
  llvm::sort(cuts);
  Extents sizes;
  for (size_t i = 1; i < cuts.size(); ++i)
    sizes.push_back(cuts[i] - cuts[i - 1]);
  return sizes;
}

std::string describe(const Shard &shard) {
  std::string text = "rank " + std::to_string(shard.rank) + " " +
                     formatList(shard.shape) + ":\n";
  for (const Piece &p : shard.pieces)
    text +=
        "  " + formatList(p.shape) + " src " + std::to_string(p.source.offset) +
        " " + formatList(p.source.strides) + " dst " +
        std::to_string(p.dest.offset) + " " + formatList(p.dest.strides) +
        " on " + formatList(p.locations) + " x" + formatScale(p.scale) + "\n";
  return text;
}

const Shard *findShard(const ParamMap &map, int64_t rank) {
  for (const Shard &shard : map.shards)
    if (shard.rank == rank)
      return &shard;
  return nullptr;
}

/// Random inner maps, one per outer rank, all over `world` ranks: flat
/// fragments (ZeRO) or, when `general`, also row splits and replication.
std::vector<ParamMap> makeInnerMaps(std::mt19937_64 &rng, const ParamMap &outer,
                                    int64_t world, bool general) {
  std::vector<ParamMap> inner;
  for (int64_t rank = 0; rank < outer.worldSize; ++rank) {
    const Shard *shard = findShard(outer, rank);
    Extents shape = shard ? shard->shape : Extents{0};
    int64_t elements = *getNumElements(shape);
    int choice = general ? std::uniform_int_distribution<int>(0, 2)(rng) : 0;
    if (choice == 1 && !shape.empty()) {
      inner.push_back(
          makeSplitMap("p", shape, 0, randomSizes(rng, shape[0], world)));
    } else if (choice == 2) {
      inner.push_back(makeReplicatedMap("p", shape, world));
    } else {
      llvm::Expected<ParamMap> flat =
          buildFlatRangeLayout("p", shape, randomSizes(rng, elements, world));
      EXPECT_TRUE(static_cast<bool>(flat)) << llvm::toString(flat.takeError());
      inner.push_back(std::move(*flat));
    }
    inner.back().worldSize = world;
  }
  return inner;
}

/// Checks that grid rank d * W + r holds inner rank d's part of outer rank
/// r's shard, value for value.
void expectNestedValues(const ParamMap &outer, llvm::ArrayRef<ParamMap> inner,
                        const ParamMap &nested) {
  std::vector<double> full(*getNumElements(outer.logicalShape));
  std::iota(full.begin(), full.end(), 1.0);
  std::vector<std::vector<double>> outerShards = extractShards(outer, full);
  std::vector<std::vector<double>> got = extractShards(nested, full);
  for (auto [index, shard] : llvm::enumerate(outer.shards)) {
    std::vector<std::vector<double>> want =
        extractShards(inner[shard.rank], outerShards[index]);
    for (auto [innerIndex, innerShard] :
         llvm::enumerate(inner[shard.rank].shards)) {
      int64_t rank = innerShard.rank * outer.worldSize + shard.rank;
      auto at = llvm::find_if(nested.shards,
                              [&](const Shard &s) { return s.rank == rank; });
      ASSERT_NE(at, nested.shards.end()) << "grid rank " << rank;
      EXPECT_EQ(at->shape, innerShard.shape);
      EXPECT_EQ(got[at - nested.shards.begin()], want[innerIndex])
          << "grid rank " << rank;
    }
  }
}

/// The composite's index map, element by element from the two index maps.
IndexMap composeIndexMaps(const ParamMap &outer, llvm::ArrayRef<ParamMap> inner,
                          int64_t world) {
  IndexMap outerIndex = getIndexMap(outer);
  IndexMap result{outer.name, outer.logicalShape, outer.worldSize * world, {}};
  for (const IndexShard &shard : outerIndex.shards) {
    IndexMap innerIndex = getIndexMap(inner[shard.rank]);
    for (const IndexShard &part : innerIndex.shards) {
      IndexShard &out = result.shards.emplace_back();
      out.rank = part.rank * outer.worldSize + shard.rank;
      out.shape = part.shape;
      for (int64_t offset : part.index)
        out.index.push_back(shard.index[offset]);
    }
  }
  llvm::sort(result.shards, [](const IndexShard &a, const IndexShard &b) {
    return a.rank < b.rank;
  });
  return result;
}

TEST(NestedLayout, ZeroFragmentsOfRandomMaps) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    ParamMap outer = makeRandomMap(rng);
    int64_t world = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    std::vector<ParamMap> inner = makeInnerMaps(rng, outer, world, false);
    llvm::Expected<ParamMap> nested = nestShardMaps(outer, inner);
    ASSERT_TRUE(static_cast<bool>(nested))
        << llvm::toString(nested.takeError());
    EXPECT_EQ(nested->worldSize, outer.worldSize * world);
    llvm::Error verified = checkParamMap(*nested);
    EXPECT_FALSE(static_cast<bool>(verified))
        << llvm::toString(std::move(verified));
    expectNestedValues(outer, inner, *nested);
  }
}

TEST(NestedLayout, OtherInnerMapsAndReplication) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 300; ++round) {
    ParamMap outer = makeRandomMap(rng);
    int64_t world = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    std::vector<ParamMap> inner = makeInnerMaps(rng, outer, world, true);
    llvm::Expected<ParamMap> nested = nestShardMaps(outer, inner);
    ASSERT_TRUE(static_cast<bool>(nested))
        << llvm::toString(nested.takeError());
    llvm::Error verified = checkParamMap(*nested);
    EXPECT_FALSE(static_cast<bool>(verified))
        << llvm::toString(std::move(verified));
    expectNestedValues(outer, inner, *nested);
  }
}

TEST(NestedLayout, PlacesEveryElementAsTheComposedIndexMapsDo) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 200; ++round) {
    ParamMap seed = makeRandomMap(rng);
    ParamMap outer = makeRandomMapOf(rng, seed.logicalShape, 5, {1.0});
    int64_t world = std::uniform_int_distribution<int64_t>(1, 3)(rng);
    std::vector<ParamMap> inner = makeInnerMaps(rng, outer, world, true);
    llvm::Expected<ParamMap> nested = nestShardMaps(outer, inner);
    ASSERT_TRUE(static_cast<bool>(nested))
        << llvm::toString(nested.takeError());
    IndexMap want = composeIndexMaps(outer, inner, world);
    IndexMap got = getIndexMap(*nested);
    ASSERT_EQ(got.shards.size(), want.shards.size());
    for (size_t s = 0; s < want.shards.size(); ++s) {
      EXPECT_EQ(got.shards[s].rank, want.shards[s].rank);
      EXPECT_EQ(got.shards[s].index, want.shards[s].index)
          << describe(nested->shards[s]);
    }
  }
}

TEST(NestedLayout, TensorParallelRowsThenDataParallelFragments) {
  // A [6, 4] weight split 4 + 2 rows over TP 2, each TP shard cut into DP 2
  // fragments of 10 + 6 and 3 + 5 elements: fragments straddle rows.
  ParamMap tp = makeSplitMap("w", {6, 4}, 0, {4, 2});
  std::vector<ParamMap> dp;
  for (auto [shape, sizes] : {std::pair{Extents{4, 4}, Extents{10, 6}},
                              std::pair{Extents{2, 4}, Extents{3, 5}}}) {
    llvm::Expected<ParamMap> flat = buildFlatRangeLayout("w", shape, sizes);
    ASSERT_TRUE(static_cast<bool>(flat));
    dp.push_back(std::move(*flat));
  }
  llvm::Expected<ParamMap> nested = nestShardMaps(tp, dp);
  ASSERT_TRUE(static_cast<bool>(nested)) << llvm::toString(nested.takeError());
  ASSERT_EQ(nested->shards.size(), 4u);
  // Grid rank 2 (DP 1 of TP 0) holds row 2's last two elements and row 3.
  const Shard &shard = nested->shards[2];
  EXPECT_EQ(shard.rank, 2);
  EXPECT_EQ(shard.shape, (Extents{6}));
  ASSERT_EQ(shard.pieces.size(), 2u);
  EXPECT_EQ(shard.pieces[0].shape, (Extents{1, 2}));
  EXPECT_EQ(shard.pieces[0].source.offset, 10);
  EXPECT_EQ(shard.pieces[1].shape, (Extents{1, 4}));
  EXPECT_EQ(shard.pieces[1].source.offset, 12);
  EXPECT_EQ(shard.pieces[1].dest.offset, 2);
}

TEST(NestedLayout, ReplicatedTensorParallelShardsShareLocations) {
  // A norm replicated on TP 2 whose DP fragments differ per TP rank: the
  // elements both TP ranks' fragment 0 hold are on grid ranks 0 and 1.
  ParamMap tp = makeReplicatedMap("n", {8}, 2);
  std::vector<ParamMap> dp;
  for (Extents sizes : {Extents{5, 3}, Extents{3, 5}}) {
    llvm::Expected<ParamMap> flat = buildFlatRangeLayout("n", {8}, sizes);
    ASSERT_TRUE(static_cast<bool>(flat));
    dp.push_back(std::move(*flat));
  }
  llvm::Expected<ParamMap> nested = nestShardMaps(tp, dp);
  ASSERT_TRUE(static_cast<bool>(nested)) << llvm::toString(nested.takeError());
  const Shard &first = nested->shards[0];
  ASSERT_EQ(first.pieces.size(), 2u);
  EXPECT_EQ(first.pieces[0].locations, (llvm::SmallVector<int64_t, 4>{0, 1}));
  EXPECT_EQ(first.pieces[1].locations, (llvm::SmallVector<int64_t, 4>{0, 3}));
  llvm::Error verified = checkParamMap(*nested);
  EXPECT_FALSE(static_cast<bool>(verified))
      << llvm::toString(std::move(verified));
}

TEST(NestedLayout, RefusesInnerMapsThatDoNotFit) {
  ParamMap tp = makeSplitMap("w", {6, 4}, 0, {4, 2});
  llvm::Expected<ParamMap> flat = buildFlatRangeLayout("w", {4, 4}, {16});
  ASSERT_TRUE(static_cast<bool>(flat));
  llvm::Expected<ParamMap> one = nestShardMaps(tp, {*flat});
  ASSERT_FALSE(static_cast<bool>(one));
  EXPECT_EQ(llvm::toString(one.takeError()),
            "parameter 'w': 1 inner maps for 2 ranks");
  llvm::Expected<ParamMap> shape = nestShardMaps(tp, {*flat, *flat});
  ASSERT_FALSE(static_cast<bool>(shape));
  EXPECT_EQ(llvm::toString(shape.takeError()),
            "parameter 'w': the inner map of rank 1 is over [4, 4] on 1 "
            "ranks, not the shard's [2, 4] on 1");
  // An outer shard with a hole: its last row is filled by no piece.
  ParamMap holed = tp;
  holed.shards[1].pieces[0].shape = {1, 4};
  llvm::Expected<ParamMap> small = buildFlatRangeLayout("w", {2, 4}, {8});
  ASSERT_TRUE(static_cast<bool>(small));
  llvm::Expected<ParamMap> hole = nestShardMaps(holed, {*flat, *small});
  ASSERT_FALSE(static_cast<bool>(hole));
  EXPECT_EQ(llvm::toString(hole.takeError()),
            "parameter 'w': rank 1: an inner shard takes element [1, 0] of "
            "the shard, which no piece fills");
  llvm::Expected<ParamMap> sizes = buildFlatRangeLayout("w", {2, 4}, {3, 4});
  ASSERT_FALSE(static_cast<bool>(sizes));
  EXPECT_EQ(llvm::toString(sizes.takeError()),
            "parameter 'w': fragments [3, 4] hold 7 of the 8 elements of "
            "[2, 4]");
}

TEST(LocationAssignment, RecoversTheLocationsOfRandomMaps) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 300; ++round) {
    ParamMap map = makeRandomMap(rng);
    llvm::Expected<ParamMap> canonical = canonicalizeParamMap(map);
    ASSERT_TRUE(static_cast<bool>(canonical));
    ParamMap stripped = map;
    for (Shard &shard : stripped.shards)
      for (Piece &piece : shard.pieces)
        piece.locations = {shard.rank};
    llvm::Expected<ParamMap> assigned = assignLocations(stripped);
    ASSERT_TRUE(static_cast<bool>(assigned));
    EXPECT_EQ(*assigned, *canonical);
  }
}

} // namespace

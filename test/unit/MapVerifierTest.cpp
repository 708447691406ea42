//===- MapVerifierTest.cpp - Whole-map properties, property tested --------===//
//
// Random valid maps verify clean; every single corruption is caught, and the
// analytic verifier's report equals the element walk's, violation for
// violation (kind, pieces, first element, count).
//
//===----------------------------------------------------------------------===//

#include "ucp/Analysis/MapVerifier.h"
#include "RandomMaps.h"
#include "WalkingVerifier.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"

#include <gtest/gtest.h>

using namespace ucp;
using namespace ucp::testing;

namespace {

std::string describeAll(const ParamMap &map, const VerifyReport &report) {
  std::string text;
  for (const Violation &v : report.violations)
    text += describeViolation(map, v) + "\n";
  return text;
}

/// Returns every non-empty piece of `map`.
std::vector<PieceRef> getNonEmptyPieces(const ParamMap &map) {
  std::vector<PieceRef> refs;
  for (unsigned s = 0; s < map.shards.size(); ++s)
    for (unsigned p = 0; p < map.shards[s].pieces.size(); ++p)
      if (getNumElements(map.shards[s].pieces[p].shape).value_or(0) > 0)
        refs.push_back({s, p});
  return refs;
}

bool hasViolation(const VerifyReport &report, ViolationKind kind) {
  return llvm::any_of(report.violations,
                      [&](const Violation &v) { return v.kind == kind; });
}

/// Checks that both verifiers agree on `map` and returns the report.
VerifyReport verifyBothWays(const ParamMap &map) {
  VerifyReport analytic = verifyParamMap(map);
  VerifyReport walked = verifyParamMapByWalking(map);
  EXPECT_EQ(analytic.violations, walked.violations)
      << "analytic:\n"
      << describeAll(map, analytic) << "walk:\n"
      << describeAll(map, walked);
  EXPECT_EQ(analytic.replicatedElements, walked.replicatedElements);
  return analytic;
}

constexpr int kIterations = 2000;

TEST(MapVerifier, RandomValidMapsVerify) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < kIterations; ++i) {
    ParamMap map = makeRandomMap(rng);
    for (const Shard &shard : map.shards)
      for (const Piece &piece : shard.pieces)
        ASSERT_EQ(checkPiece(piece, map.logicalShape, shard.shape, shard.rank,
                             map.worldSize),
                  "");
    VerifyReport report = verifyBothWays(map);
    ASSERT_TRUE(report.ok()) << "iteration " << i << "\n"
                             << describeAll(map, report);
  }
}

TEST(MapVerifier, DeletedPieceLeavesAHoleAtItsFirstElement) {
  std::mt19937_64 rng(2);
  for (int i = 0; i < kIterations; ++i) {
    ParamMap map = makeRandomMap(rng);
    std::vector<PieceRef> pieces = getNonEmptyPieces(map);
    if (pieces.empty())
      continue;
    PieceRef victim = pieces[rng() % pieces.size()];
    Shard &shard = map.shards[victim.shard];
    Piece removed = shard.pieces[victim.piece];
    shard.pieces.erase(shard.pieces.begin() + victim.piece);

    VerifyReport report = verifyBothWays(map);
    ASSERT_FALSE(report.ok());
    // The shard hole starts at the removed piece's first dest element.
    auto hole = llvm::find_if(report.violations, [&](const Violation &v) {
      return v.kind == ViolationKind::ShardHole && *v.shard == victim.shard;
    });
    ASSERT_NE(hole, report.violations.end()) << describeAll(map, report);
    EXPECT_EQ(hole->count, *getNumElements(removed.shape));
    // Unless another rank still holds the block, F loses it (P1); if others
    // do, they now hold it without this rank (P5).
    EXPECT_TRUE(hasViolation(report, removed.locations.size() > 1
                                         ? ViolationKind::LocationsNotHolders
                                         : ViolationKind::Uncovered))
        << describeAll(map, report);
  }
}

TEST(MapVerifier, ShrunkPieceIsCaught) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < kIterations; ++i) {
    ParamMap map = makeRandomMap(rng);
    std::vector<PieceRef> pieces = getNonEmptyPieces(map);
    if (pieces.empty())
      continue;
    PieceRef victim = pieces[rng() % pieces.size()];
    Piece &piece = map.shards[victim.shard].pieces[victim.piece];
    size_t dim = rng() % piece.shape.size();
    if (piece.shape[dim] < 1)
      continue;
    --piece.shape[dim];
    VerifyReport report = verifyBothWays(map);
    ASSERT_TRUE(hasViolation(report, ViolationKind::ShardHole))
        << describeAll(map, report);
  }
}

TEST(MapVerifier, OverlapWithDifferentLocationsIsCaught) {
  std::mt19937_64 rng(4);
  int caught = 0;
  for (int i = 0; i < 4 * kIterations; ++i) {
    ParamMap map = makeRandomMap(rng);
    std::vector<PieceRef> pieces = getNonEmptyPieces(map);
    if (pieces.size() < 2)
      continue;
    // Point one piece's source at another piece's first element of F.
    PieceRef a = pieces[rng() % pieces.size()],
             b = pieces[rng() % pieces.size()];
    Piece &pa = map.shards[a.shard].pieces[a.piece];
    const Piece &pb = map.shards[b.shard].pieces[b.piece];
    const Shard &shardA = map.shards[a.shard];
    Piece moved = pa;
    moved.source.offset = pb.source.offset;
    if (pa.locations == pb.locations ||
        !checkPiece(moved, map.logicalShape, shardA.shape, shardA.rank,
                    map.worldSize)
             .empty())
      continue;
    pa = moved;
    VerifyReport report = verifyBothWays(map);
    ASSERT_TRUE(hasViolation(report, ViolationKind::MixedLocations))
        << describeAll(map, report);
    ++caught;
  }
  EXPECT_GT(caught, 10);
}

TEST(MapVerifier, ShardElementWrittenTwiceIsCaught) {
  std::mt19937_64 rng(5);
  int caught = 0;
  for (int i = 0; i < kIterations; ++i) {
    ParamMap map = makeRandomMap(rng);
    for (Shard &shard : map.shards) {
      if (shard.pieces.size() < 2)
        continue;
      // Move the second piece's dest onto the first's, when it fits.
      Piece &moved = shard.pieces[1];
      int64_t target = shard.pieces[0].dest.offset;
      std::optional<int64_t> last =
          getLastOffset(moved.shape, {target, moved.dest.strides});
      if (!getNumElements(moved.shape).value_or(0) ||
          !getNumElements(shard.pieces[0].shape).value_or(0) || !last ||
          *last >= *getNumElements(shard.shape) || target == moved.dest.offset)
        continue;
      moved.dest.offset = target;
      VerifyReport report = verifyBothWays(map);
      ASSERT_TRUE(hasViolation(report, ViolationKind::ShardOverlap))
          << describeAll(map, report);
      ++caught;
      break;
    }
  }
  EXPECT_GT(caught, 10);
}

TEST(MapVerifier, ScaleChangeInsideReplicatedBlockIsCaught) {
  ParamMap map = makeReplicatedMap("bias", {16}, 4, 0.25);
  EXPECT_TRUE(verifyBothWays(map).ok());
  map.shards[2].pieces[0].scale = 0.5;
  VerifyReport report = verifyBothWays(map);
  ASSERT_EQ(report.violations.size(), 1u);
  EXPECT_EQ(report.violations[0].kind, ViolationKind::MixedScale);
  EXPECT_EQ(describeViolation(map, report.violations[0]),
            "parameter 'bias': rank 0 piece #0 (scale 0.25) and rank 2 piece "
            "#0 (scale 0.5) share 16 elements of F but declare different "
            "scales (P5); the first is [0]");
}

TEST(MapVerifier, BigcodeNeedsTheReplicationBoundary) {
  ParamMap map = makeBigcodeMap("c_attn.weight", 32, 16, 8, 4);
  VerifyReport report = verifyBothWays(map);
  EXPECT_TRUE(report.ok()) << describeAll(map, report);
  EXPECT_EQ(report.replicatedElements, 16 * 8);

  // Merging rank 3's q rows into the replicated kv block (adjacent in F and
  // in the shard) gives one piece whose locations cannot be right.
  Shard &last = map.shards[3];
  last.pieces[0].shape = {24, 8};
  last.pieces[0].locations = {0, 1, 2, 3};
  last.pieces.pop_back();
  report = verifyBothWays(map);
  ASSERT_FALSE(report.ok());
  EXPECT_TRUE(hasViolation(report, ViolationKind::LocationsNotHolders))
      << describeAll(map, report);
}

TEST(MapVerifier, AccountsElementsPerRank) {
  ParamMap map = makeSplitMap("w", {10, 8}, 0, splitEvenly(10, 4));
  VerifyReport report = verifyParamMap(map);
  ASSERT_EQ(report.ranks.size(), 4u);
  EXPECT_EQ(report.ranks[0].shardElements, 24);
  EXPECT_EQ(report.ranks[3].pieceElements, 16);
  EXPECT_EQ(report.elements, 80);
  EXPECT_EQ(report.replicatedElements, 0);
}

TEST(MapVerifier, DescribesUncoveredElements) {
  ParamMap map = makeSplitMap("w", {10, 8}, 1, {3, 3, 2});
  map.shards[1].pieces.clear();
  VerifyReport report = verifyBothWays(map);
  ASSERT_EQ(report.violations.size(), 2u);
  EXPECT_EQ(describeViolation(map, report.violations[0]),
            "parameter 'w': 30 elements of F are held by no piece (P1); the "
            "first is [0, 3]");
  EXPECT_EQ(describeViolation(map, report.violations[1]),
            "parameter 'w': rank 1: 30 elements of the shard are written by no "
            "piece; the first is [0, 0]");
}

} // namespace

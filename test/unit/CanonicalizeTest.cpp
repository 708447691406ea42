//===- CanonicalizeTest.cpp - Canonical form and index-map derivation -----===//
//
// Random maps (pieces permuted, flattened, padded with extent-1 dimensions,
// stacked or flat shards, replicated and scaled blocks): canonicalizing and
// deriving from the index map both give canonical maps that verify, are
// fixpoints, and put every element of F where the original map does.
//
//===----------------------------------------------------------------------===//

#include "ucp/Canonical/Canonicalize.h"
#include "RandomMaps.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Canonical/IndexMapDerivation.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Map/Indexing.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace ucp;
using namespace ucp::testing;

namespace {

std::string describe(const ParamMap &map) {
  std::string text;
  for (const Shard &shard : map.shards) {
    text += "rank " + std::to_string(shard.rank) + " " +
            formatList(shard.shape) + ":\\n";
    for (const Piece &p : shard.pieces)
      text += "  " + formatList(p.shape) + " src " +
              std::to_string(p.source.offset) + " " +
              formatList(p.source.strides) + " dst " +
              std::to_string(p.dest.offset) + " " + formatList(p.dest.strides) +
              " on " + formatList(p.locations) + "\\n";
  }
  return text;
}

/// Checks the canonical-form invariants of `map`.
void expectCanonicalForm(const ParamMap &map) {
  Extents fStrides = getRowMajorStrides(map.logicalShape);
  for (const Shard &shard : map.shards) {
    for (size_t i = 0; i < shard.pieces.size(); ++i) {
      const Piece &piece = shard.pieces[i];
      EXPECT_EQ(piece.shape.size(), map.logicalShape.size());
      EXPECT_EQ(piece.source.strides, fStrides);
      EXPECT_GT(getNumElements(piece.shape).value_or(0), 0);
      // A dimension of extent 1 has the stride it would have if contiguous
      // with the dimension inside it.
      for (size_t d = 0; d < piece.shape.size(); ++d) {
        if (piece.shape[d] == 1) {
          EXPECT_EQ(piece.dest.strides[d],
                    d + 1 == piece.shape.size()
                        ? 1
                        : piece.shape[d + 1] * piece.dest.strides[d + 1])
              << "dimension " << d << " of " << formatList(piece.shape);
        }
      }
      if (i > 0) {
        EXPECT_LT(shard.pieces[i - 1].dest.offset, piece.dest.offset);
      }
    }
  }
}

void expectSameMaps(const ParamMap &a, const ParamMap &b) {
  ASSERT_EQ(a.shards.size(), b.shards.size());
  for (size_t s = 0; s < a.shards.size(); ++s)
    EXPECT_EQ(a.shards[s].pieces, b.shards[s].pieces) << "shard " << s << "\\n"
                                                      << describe(a) << "vs\\n"
                                                      << describe(b);
}

TEST(Canonicalize, RandomMapsKeepEveryElementInPlace) {
  std::mt19937_64 rng(21);
  for (int i = 0; i < 2000; ++i) {
    ParamMap map = makeRandomMap(rng);
    llvm::Expected<ParamMap> canonical = canonicalizeParamMap(map);
    ASSERT_TRUE(static_cast<bool>(canonical));
    expectCanonicalForm(*canonical);
    EXPECT_TRUE(verifyParamMap(*canonical).ok()) << describe(*canonical);

    std::vector<double> full =
        makeMarkers(*getNumElements(map.logicalShape), rng);
    ASSERT_EQ(extractShards(*canonical, full), extractShards(map, full))
        << describe(map) << "canonical:\\n"
        << describe(*canonical);

    // Idempotent.
    llvm::Expected<ParamMap> again = canonicalizeParamMap(*canonical);
    ASSERT_TRUE(static_cast<bool>(again));
    expectSameMaps(*again, *canonical);
    if (HasFailure())
      return;
  }
}

/// Random layout -> index map -> derive -> verify -> canonicalize (a
/// fixpoint) -> JSON round trip: all agree on where every element goes. (Their
/// pieces may group an ambiguous progression differently: rows at shard rows
/// 24, 48, 60, 72 are two progressions either way.)
TEST(Canonicalize, DerivationFromIndexMapsAgreesWithCanonicalization) {
  std::mt19937_64 rng(22);
  for (int i = 0; i < 2000; ++i) {
    ParamMap map = makeRandomMap(rng);
    // Index maps carry no scale: derive the unscaled layout.
    for (Shard &shard : map.shards)
      for (Piece &piece : shard.pieces)
        piece.scale = 1.0;
    llvm::Expected<ParamMap> derived = deriveParamMap(getIndexMap(map));
    ASSERT_TRUE(static_cast<bool>(derived))
        << llvm::toString(derived.takeError());
    expectCanonicalForm(*derived);
    EXPECT_TRUE(verifyParamMap(*derived).ok()) << describe(*derived);
    std::vector<double> full =
        makeMarkers(*getNumElements(map.logicalShape), rng);
    ASSERT_EQ(extractShards(*derived, full), extractShards(map, full))
        << describe(map) << "derived:\\n"
        << describe(*derived);
    llvm::Expected<ParamMap> again = canonicalizeParamMap(*derived);
    ASSERT_TRUE(static_cast<bool>(again));
    expectSameMaps(*again, *derived);

    // Through the JSON document and back: the same pieces.
    std::string text;
    llvm::raw_string_ostream os(text);
    writeMapDocument({*derived}, os);
    llvm::Expected<std::vector<ParamMap>> parsed = parseMapDocument(text);
    ASSERT_TRUE(static_cast<bool>(parsed))
        << llvm::toString(parsed.takeError());
    for (const Shard &shard : derived->shards)
      EXPECT_EQ((*parsed)[0].shards[shard.rank].pieces, shard.pieces);
    if (HasFailure())
      return;
  }
}

TEST(Canonicalize, RefusesIndexMapsThatAreNotViews) {
  IndexMap indexMap{
      "w", {2, 4}, 2, {{0, {4}, {0, 1, 2, 3}}, {1, {4}, {4, 5, 6}}}};
  llvm::Expected<ParamMap> shortIndex = deriveParamMap(indexMap);
  ASSERT_FALSE(static_cast<bool>(shortIndex));
  EXPECT_EQ(llvm::toString(shortIndex.takeError()),
            "parameter 'w': rank 1: shard shape [4] has 4 elements but its "
            "index lists 3");
  indexMap.shards[1].index = {4, 5, 6, 8};
  llvm::Expected<ParamMap> outside = deriveParamMap(indexMap);
  ASSERT_FALSE(static_cast<bool>(outside));
  EXPECT_EQ(llvm::toString(outside.takeError()),
            "parameter 'w': rank 1: shard element [3] comes from offset 8, "
            "outside F of 8 elements");
}

TEST(Canonicalize, ReplicationIsInferredFromSharedOffsets) {
  IndexMap indexMap{
      "w", {4}, 3, {{0, {3}, {0, 1, 2}}, {1, {2}, {2, 3}}, {2, {0}, {}}}};
  llvm::Expected<ParamMap> map = deriveParamMap(indexMap);
  ASSERT_TRUE(static_cast<bool>(map));
  ASSERT_EQ(map->shards[0].pieces.size(), 2u);
  EXPECT_EQ(map->shards[0].pieces[1].locations, (Extents{0, 1}));
  EXPECT_EQ(map->shards[1].pieces[0].locations, (Extents{0, 1}));
  EXPECT_EQ(map->shards[1].pieces[1].locations, (Extents{1}));
  EXPECT_TRUE(map->shards[2].pieces.empty());
  EXPECT_TRUE(verifyParamMap(*map).ok());
}

} // namespace

//===- LegacyMetadataTest.cpp - Recorded maps against the categories ------===//
//
// A map the metadata carries (universal_checkpoint_info's affine_map) wins
// over the categories in every lowering: at a degree (lowerLegacyParam),
// from a checkpoint's shard shapes (lowerObservedParam), and in what the
// Universal converter records (classifyUniversalMerge).
//
//===----------------------------------------------------------------------===//

#include "ucp/Layout/LegacyMetadata.h"
#include "ucp/Layout/TensorParallelLayouts.h"

#include <gtest/gtest.h>

using namespace ucp;

namespace {

/// `w` [2, 4] is row-parallel by its pattern (columns split at TP 2), and
/// its recorded map splits rows.
LegacyCategories getCategoriesWithRowMap() {
  LegacyCategories categories;
  categories.rowParallel = {"^w$"};
  llvm::Expected<ParamMap> rows = buildSplitLayout("w", {2, 4}, 0, {1, 1});
  EXPECT_TRUE(static_cast<bool>(rows));
  categories.affineMaps["w"] = *rows;
  return categories;
}

} // namespace

TEST(RecordedMaps, WinAtTheirDegree) {
  LegacyCategories categories = getCategoriesWithRowMap();
  llvm::Expected<ParamMap> map =
      lowerLegacyParam({"w", {2, 4}, {}}, categories, 2);
  ASSERT_TRUE(static_cast<bool>(map));
  EXPECT_EQ(*map, categories.affineMaps["w"]);

  llvm::Expected<ParamMap> other =
      lowerLegacyParam({"w", {2, 4}, {}}, categories, 4);
  ASSERT_FALSE(static_cast<bool>(other));
  EXPECT_EQ(llvm::toString(other.takeError()),
            "parameter 'w': the affine_map the metadata carries maps [2, 4] "
            "at TP 2, not [2, 4] at TP 4");

  categories.affineMaps.clear();
  llvm::Expected<ParamMap> columns =
      lowerLegacyParam({"w", {2, 4}, {}}, categories, 2);
  ASSERT_TRUE(static_cast<bool>(columns));
  EXPECT_EQ(columns->shards[0].shape, (Extents{2, 2}));
}

TEST(RecordedMaps, WinOverTheShardShapesRule) {
  LegacyCategories categories = getCategoriesWithRowMap();
  llvm::Expected<ParamMap> map =
      lowerObservedParam("w", {{1, 4}, {1, 4}}, categories);
  ASSERT_TRUE(static_cast<bool>(map));
  EXPECT_EQ(*map, categories.affineMaps["w"]);

  // Shards the map does not give are refused, not re-split.
  llvm::Expected<ParamMap> wrong =
      lowerObservedParam("w", {{2, 2}, {2, 2}}, categories);
  ASSERT_FALSE(static_cast<bool>(wrong));
  EXPECT_EQ(llvm::toString(wrong.takeError()),
            "parameter 'w': TP rank 0 holds [2, 2], but its layout gives it "
            "[1, 4]");
  llvm::Expected<ParamMap> fewer =
      lowerObservedParam("w", {{2, 4}}, categories);
  ASSERT_FALSE(static_cast<bool>(fewer));
  EXPECT_EQ(llvm::toString(fewer.takeError()),
            "parameter 'w': its layout is over 2 ranks, and its shards over 1 "
            "TP ranks");

  // Without the map, the row-parallel rule reads those shards as columns
  // of another tensor.
  categories.affineMaps.clear();
  llvm::Expected<ParamMap> columns =
      lowerObservedParam("w", {{1, 4}, {1, 4}}, categories);
  ASSERT_TRUE(static_cast<bool>(columns));
  EXPECT_EQ(columns->logicalShape, (Extents{1, 8}));
}

TEST(RecordedMaps, MergeByTheMap) {
  LegacyCategories categories = getCategoriesWithRowMap();
  categories.vocabulary = {"^w"};
  categories.average = {"^w$"};
  llvm::Expected<UniversalMerge> merge =
      classifyUniversalMerge("w", categories);
  ASSERT_TRUE(static_cast<bool>(merge));
  EXPECT_FALSE(merge->catDim);
  EXPECT_FALSE(merge->subParamCount);
  EXPECT_FALSE(merge->subParams);
  EXPECT_TRUE(merge->vocabulary);
  EXPECT_EQ(merge->usedPatterns,
            (std::vector<std::string>{"^w$", "^w"}));

  // Without it: averaged, and refused.
  categories.affineMaps.clear();
  EXPECT_FALSE(static_cast<bool>(classifyUniversalMerge("w", categories)));
}

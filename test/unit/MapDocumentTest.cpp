//===- MapDocumentTest.cpp - JSON map documents ---------------------------===//

#include "ucp/Formats/Json/MapDocument.h"
#include "RandomMaps.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace ucp;
using namespace ucp::testing;

namespace {

std::string write(llvm::ArrayRef<ParamMap> maps) {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeMapDocument(maps, os);
  return text;
}

std::vector<ParamMap> parse(llvm::StringRef text) {
  llvm::Expected<std::vector<ParamMap>> maps = parseMapDocument(text);
  if (!maps) {
    ADD_FAILURE() << llvm::toString(maps.takeError());
    return {};
  }
  return std::move(*maps);
}

TEST(MapDocument, PatternsEscapeLikePython) {
  EXPECT_EQ(getParamPattern("transformer.h.0.attn.c_attn.weight"),
            "^transformer\\.h\\.0\\.attn\\.c_attn\\.weight$");
  EXPECT_EQ(getParamPattern("a-b c#d"), "^a\\-b\\ c\\#d$");
  for (llvm::StringRef name : {"x.y", "a(b)[c]{d}*+?|^$\\", "plain_name"}) {
    llvm::Expected<std::string> back = getParamName(getParamPattern(name));
    ASSERT_TRUE(static_cast<bool>(back));
    EXPECT_EQ(*back, name);
  }
}

TEST(MapDocument, UnescapedDotIsLiteralOtherOperatorsAreRefused) {
  llvm::Expected<std::string> dotted = getParamName("^a.b$");
  ASSERT_TRUE(static_cast<bool>(dotted));
  EXPECT_EQ(*dotted, "a.b");
  llvm::Expected<std::string> star = getParamName("^a.*$");
  ASSERT_FALSE(static_cast<bool>(star));
  EXPECT_NE(llvm::toString(star.takeError()).find("'*'"), std::string::npos);
  // A key without ^...$ is the name itself (DeepSpeed keys AutoEP's
  // affine_maps so), unless a regex operator makes it a pattern.
  llvm::Expected<std::string> bare = getParamName("a.b");
  ASSERT_TRUE(static_cast<bool>(bare));
  EXPECT_EQ(*bare, "a.b");
  llvm::Expected<std::string> loose = getParamName("a.*");
  ASSERT_FALSE(static_cast<bool>(loose));
  EXPECT_NE(llvm::toString(loose.takeError())
                .find("must be a parameter name or an exact-match pattern"),
            std::string::npos);
}

/// Random maps survive write -> parse with every piece intact; the written
/// document is a fixpoint of parse -> write.
TEST(MapDocument, RandomMapsRoundTrip) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300; ++i) {
    std::vector<ParamMap> maps;
    for (int k = 0, n = 1 + rng() % 3; k < n; ++k) {
      maps.push_back(makeRandomMap(rng));
      maps.back().name = "layer." + std::to_string(k) + ".weight";
      if (rng() % 2)
        maps.back().originalVocabSize =
            rng() % (maps.back().logicalShape[0] + 1);
    }
    std::string text = write(maps);
    std::vector<ParamMap> back = parse(text);
    ASSERT_EQ(back.size(), maps.size());
    for (size_t k = 0; k < maps.size(); ++k) {
      EXPECT_EQ(back[k].name, maps[k].name);
      EXPECT_EQ(back[k].logicalShape, maps[k].logicalShape);
      EXPECT_EQ(back[k].worldSize, maps[k].worldSize);
      EXPECT_EQ(back[k].originalVocabSize, maps[k].originalVocabSize);
      // Every rank is listed; those the map had keep their pieces.
      ASSERT_EQ(back[k].shards.size(), static_cast<size_t>(maps[k].worldSize));
      for (const Shard &shard : maps[k].shards) {
        const Shard &parsed = back[k].shards[shard.rank];
        EXPECT_EQ(parsed.shape, shard.shape);
        EXPECT_EQ(parsed.pieces, shard.pieces);
      }
    }
    EXPECT_EQ(write(back), text);
  }
}

TEST(MapDocument, AcceptsWrappedAndWholeCheckpointInfo) {
  std::string bare = write({makeReplicatedMap("norm.weight", {4}, 2, 0.5)});
  std::string wrapped = "{\"affine_map\": " + bare + "}";
  std::string info = "{\"universal_checkpoint_version\": 0.5, "
                     "\"tp_replicated_parameter_patterns\": [], "
                     "\"affine_map\": " +
                     bare + "}";
  for (const std::string &text : {bare, wrapped, info}) {
    std::vector<ParamMap> maps = parse(text);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_EQ(maps[0].name, "norm.weight");
    EXPECT_EQ(maps[0].shards[1].pieces[0].scale, 0.5);
  }
}

TEST(MapDocument, ErrorsCarryTheJsonPath) {
  llvm::Expected<std::vector<ParamMap>> maps = parseMapDocument(
      R"({"version": 1, "params": {"^w$": {"logical_shape": [4, 2],
          "ranks": {"0": {"shard_shape": [4, 2], "pieces": [
            {"shape": [4, -2], "source": [0, [2, 1]], "dest": [0, [2, 1]],
             "locations": [0]}]}}}}})");
  ASSERT_FALSE(static_cast<bool>(maps));
  EXPECT_EQ(llvm::toString(maps.takeError()),
            "$.params[\"^w$\"].ranks[\"0\"].pieces[0]: extent -2 in dimension "
            "1 must be non-negative");
}

} // namespace

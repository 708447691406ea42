//===- TransferTest.cpp - affine-run's engine on files, bit for bit -------===//
//
// runTransfer extracts, reshards and rebuilds sets of random maps (uneven and
// empty splits, replication, power-of-two scales, padded shards, worlds of
// different sizes in one set) between safetensors files, for every dtype.
// Each output file is compared with what a plain loop over the pieces of
// both maps gives from the input files: element by element through F,
// scaled by the ratio of the two pieces' scales, zero where no piece writes.
// A padded vocabulary's padding, poisoned in the source shards, reaches no
// output; file tensors of another shape than the map's are refused.
//
//===----------------------------------------------------------------------===//

#include "ucp/Jobs/Transfer.h"
#include "RandomMaps.h"
#include "ScratchFolder.h"
#include "ucp/Formats/Safetensors/Safetensors.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Planner.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace ucp;
using namespace ucp::testing;

namespace {

/// Plans `from` into `to` with the planner and runs the transfer.
llvm::Expected<TransferStats> planAndRun(const TransferSide &from,
                                         const TransferSide &to,
                                         const TransferOptions &options) {
  llvm::Expected<TransferPrograms> programs =
      planTransfers(from.maps, to.maps, options.policy);
  if (!programs)
    return programs.takeError();
  return runTransfer(from, to, *programs, options);
}

/// The files of one side, opened for reading, by rank.
using OpenFiles = std::map<int64_t, std::unique_ptr<SafetensorsReader>>;

OpenFiles openSide(const TransferSide &side) {
  OpenFiles open;
  for (const auto &[rank, path] : side.files) {
    auto reader = SafetensorsReader::open(path);
    EXPECT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
    if (reader)
      open[rank] = std::move(*reader);
  }
  return open;
}

/// An element of F as some shard holds it: its bytes and the scale of the
/// piece that put it there.
struct HeldElement {
  const char *bytes = nullptr;
  double scale = 1.0;
};

/// Checks every tensor of `to`'s files against the reference transfer of
/// `from`'s files: one piece element at a time, through F.
void expectReferenceTransfer(const TransferSide &from, const TransferSide &to,
                             DType type, const std::string &context) {
  int64_t size = getElementSize(type);
  OpenFiles inputs = openSide(from), outputs = openSide(to);
  std::map<int64_t, size_t> tensorsOfRank;
  for (size_t p = 0; p < from.maps.size(); ++p) {
    const ParamMap &source = from.maps[p], &target = to.maps[p];
    ASSERT_EQ(source.name, target.name);
    std::vector<HeldElement> full(
        getNumElements(source.logicalShape).value_or(0));
    for (const Shard &shard : source.shards) {
      const SafetensorsReader &reader = *inputs.at(shard.rank);
      const char *data = reader.getData(*reader.find(source.name));
      for (const Piece &piece : shard.pieces)
        forEachElement(piece.shape, {piece.source, piece.dest},
                       [&](llvm::ArrayRef<int64_t> at) {
                         full[at[0]] = {data + at[1] * size, piece.scale};
                       });
    }
    for (const Shard &shard : target.shards) {
      std::vector<char> expected(getNumElements(shard.shape).value_or(0) *
                                 size);
      for (const Piece &piece : shard.pieces)
        forEachElement(piece.shape, {piece.source, piece.dest},
                       [&](llvm::ArrayRef<int64_t> at) {
                         const HeldElement &held = full[at[0]];
                         ASSERT_TRUE(held.bytes) << "element " << at[0];
                         char *element = &expected[at[1] * size];
                         std::memcpy(element, held.bytes, size);
                         double factor = piece.scale / held.scale;
                         if (factor != 1.0)
                           scaleElements(type, element, 1, factor);
                       });
      const SafetensorsReader &reader = *outputs.at(shard.rank);
      const TensorInfo *tensor = reader.find(target.name);
      ASSERT_TRUE(tensor) << context << ": " << target.name << " on rank "
                          << shard.rank;
      ++tensorsOfRank[shard.rank];
      EXPECT_EQ(tensor->dtype, type);
      EXPECT_EQ(tensor->shape, shard.shape);
      ASSERT_EQ(tensor->end - tensor->begin,
                static_cast<int64_t>(expected.size()));
      EXPECT_TRUE(llvm::ArrayRef(reader.getData(*tensor), expected.size()) ==
                  llvm::ArrayRef(expected))
          << context << ": " << target.name << " on rank " << shard.rank;
    }
  }
  // Every rank file exists and holds exactly its shards.
  for (const auto &[rank, reader] : outputs)
    EXPECT_EQ(reader->getTensors().size(), tensorsOfRank[rank])
        << context << ": rank " << rank;
}

/// Random maps of tensors of `shapes`, named `layer.<i>.weight`, each over
/// its own world of up to five ranks, with scales drawn from `scales`.
std::vector<ParamMap> makeRandomMapSet(std::mt19937_64 &rng,
                                       const std::vector<Extents> &shapes,
                                       llvm::ArrayRef<double> scales) {
  std::vector<ParamMap> maps;
  for (size_t p = 0; p < shapes.size(); ++p) {
    maps.push_back(makeRandomMapOf(rng, shapes[p], 5, scales));
    maps.back().name = "layer." + std::to_string(p) + ".weight";
  }
  return maps;
}

TEST(Transfer, RandomMapSetsMatchTheReferenceOnFiles) {
  std::mt19937_64 rng(47);
  for (int i = 0; i < 480; ++i) {
    DType type = kAllDTypes[i % std::size(kAllDTypes)];
    // Integers cannot be scaled; floats get power-of-two scales, so that a
    // factor and its inverse are exact away from the edges of the range.
    std::vector<double> scales = {1.0};
    if (isFloatingPoint(type))
      scales = {1.0, 1.0, 0.5, 0.25, 2.0};
    std::vector<Extents> shapes(1 + rng() % 4);
    for (Extents &shape : shapes)
      for (int64_t d = 0, rank = rng() % 4; d < rank; ++d)
        shape.push_back(1 + rng() % 7);
    std::vector<ParamMap> from = makeRandomMapSet(rng, shapes, scales);
    std::vector<ParamMap> to = makeRandomMapSet(rng, shapes, scales);
    std::string context =
        "iteration " + std::to_string(i) + " " + getSafetensorsName(type).str();

    ScratchFolder folder;
    std::string original = folder.file("full.safetensors");
    ASSERT_FALSE(bool(writeRandomFullTensors(from, original, type, i)));
    TransferOptions options;
    options.threads = 1 + i % 2;
    options.syncOutputs = false;
    const std::pair<TransferSide, TransferSide> steps[] = {
        {getFullTensorSide(from, original),
         getShardSide(from, folder.file("a"))},
        {getShardSide(from, folder.file("a")),
         getShardSide(to, folder.file("b"))},
        {getShardSide(to, folder.file("b")),
         getFullTensorSide(to, folder.file("rebuilt.safetensors"))},
    };
    const char *names[] = {"extract", "reshard", "rebuild"};
    for (auto [step, sides] : llvm::enumerate(steps)) {
      const auto &[input, output] = sides;
      llvm::Expected<TransferStats> stats = planAndRun(input, output, options);
      ASSERT_TRUE(bool(stats)) << context << " " << names[step] << ": "
                               << llvm::toString(stats.takeError());
      EXPECT_EQ(stats->parameters, shapes.size());
      expectReferenceTransfer(input, output, type, context + " " + names[step]);
      if (HasFailure())
        return;
    }
  }
}

/// Rewrites the tensor `name` of the safetensors file `path`, passing its
/// bytes through `edit`.
void rewriteTensor(const std::string &path, llvm::StringRef name,
                   llvm::function_ref<void(llvm::MutableArrayRef<char>)> edit) {
  std::vector<TensorInfo> tensors;
  std::vector<std::vector<char>> data;
  {
    auto reader = SafetensorsReader::open(path);
    ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
    for (const TensorInfo &tensor : (*reader)->getTensors()) {
      tensors.push_back(tensor);
      const char *bytes = (*reader)->getData(tensor);
      data.emplace_back(bytes, bytes + (tensor.end - tensor.begin));
      if (tensor.name == name)
        edit(data.back());
    }
  }
  auto writer = SafetensorsWriter::create(path, tensors);
  ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
  for (auto [tensor, bytes] : llvm::zip(tensors, data))
    std::copy(bytes.begin(), bytes.end(), (*writer)->getData(tensor.name));
  ASSERT_FALSE(bool((*writer)->commit()));
}

/// The bytes of tensor `name` in the safetensors file `path`.
std::vector<char> readTensor(const std::string &path, llvm::StringRef name) {
  auto reader = SafetensorsReader::open(path);
  EXPECT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  if (!reader)
    return {};
  const TensorInfo *tensor = (*reader)->find(name);
  EXPECT_TRUE(tensor) << name.str();
  if (!tensor)
    return {};
  const char *bytes = (*reader)->getData(*tensor);
  return {bytes, bytes + (tensor->end - tensor->begin)};
}

/// A padded vocabulary's padding rows are never read: poisoned in the
/// source shards, they reach neither the full tensor nor the padding of
/// other shards, which comes out as zeros.
TEST(Transfer, PoisonedPaddingNeverReachesTheOutputs) {
  ScratchFolder folder;
  // 13 rows: 16 at TP=4 (rank 3 holds 3 padding rows), 14 at TP=2 (rank 1
  // holds 1).
  std::vector<ParamMap> tp4 = {
      llvm::cantFail(buildPaddedVocabLayout("embed", 13, 8, 4))};
  std::vector<ParamMap> tp2 = {
      llvm::cantFail(buildPaddedVocabLayout("embed", 13, 8, 2))};
  std::string original = folder.file("full.safetensors");
  ASSERT_FALSE(bool(writeRandomFullTensors(tp4, original, DType::F32, 3)));
  TransferOptions options;
  options.syncOutputs = false;
  auto run = [&](const TransferSide &from, const TransferSide &to) {
    llvm::Expected<TransferStats> stats = planAndRun(from, to, options);
    ASSERT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  };
  run(getFullTensorSide(tp4, original), getShardSide(tp4, folder.file("a")));
  const int64_t rowBytes = 8 * 4;
  rewriteTensor(folder.file("a/rank_3.safetensors"), "embed",
                [&](llvm::MutableArrayRef<char> bytes) {
                  ASSERT_EQ(bytes.size(), size_t(4 * rowBytes));
                  std::fill(bytes.begin() + rowBytes, bytes.end(), '\xff');
                });

  run(getShardSide(tp4, folder.file("a")), getShardSide(tp2, folder.file("b")));
  std::vector<char> rank1 =
      readTensor(folder.file("b/rank_1.safetensors"), "embed");
  ASSERT_EQ(rank1.size(), size_t(7 * rowBytes));
  EXPECT_EQ(std::vector<char>(rank1.begin() + 6 * rowBytes, rank1.end()),
            std::vector<char>(rowBytes, 0));

  run(getShardSide(tp2, folder.file("b")),
      getFullTensorSide(tp2, folder.file("from-b.safetensors")));
  run(getShardSide(tp4, folder.file("a")),
      getFullTensorSide(tp4, folder.file("from-a.safetensors")));
  std::vector<char> full = readTensor(original, "embed");
  ASSERT_EQ(full.size(), size_t(13 * rowBytes));
  EXPECT_EQ(readTensor(folder.file("from-b.safetensors"), "embed"), full);
  EXPECT_EQ(readTensor(folder.file("from-a.safetensors"), "embed"), full);
}

/// Runs an extract of a [4, 8] row split from a full-tensor file whose
/// tensor has `fileShape`.
llvm::Error extractFromFileOfShape(const Extents &fileShape) {
  ScratchFolder folder;
  std::vector<ParamMap> maps = {*buildSplitLayout("w", {4, 8}, 0, {2, 2})};
  std::string full = folder.file("full.safetensors");
  auto writer =
      SafetensorsWriter::create(full, {{"w", DType::F32, fileShape, 0, 0}});
  if (!writer)
    return writer.takeError();
  if (llvm::Error error = (*writer)->commit())
    return error;
  TransferOptions options;
  options.syncOutputs = false;
  return planAndRun(getFullTensorSide(maps, full),
                    getShardSide(maps, folder.file("shards")), options)
      .takeError();
}

TEST(Transfer, FileTensorsHaveTheMapsShapeOrAreFlat) {
  for (Extents accepted :
       {Extents{4, 8}, Extents{32}, Extents{1, 4, 1, 8}, Extents{1, 32}})
    EXPECT_FALSE(bool(extractFromFileOfShape(accepted)))
        << formatList(accepted);
  // As many elements, but another layout: a transposed weight.
  for (Extents refused : {Extents{8, 4}, Extents{2, 16}, Extents{4, 2, 4}}) {
    std::string message = llvm::toString(extractFromFileOfShape(refused));
    EXPECT_NE(message.find("tensor 'w' has shape " + formatList(refused) +
                           " but the shard of rank 0 in the full tensors of "
                           "the map is [4, 8] (as many elements in another "
                           "shape"),
              std::string::npos)
        << message;
  }
  EXPECT_NE(llvm::toString(extractFromFileOfShape({4, 9}))
                .find("has shape [4, 9] but the shard of rank 0 in the full "
                      "tensors of the map is "
                      "[4, 8]"),
            std::string::npos);
}

} // namespace

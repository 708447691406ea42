//===- SafetensorsTest.cpp - Writing and reading safetensors files --------===//
//
// A committed file reads back what was written; a writer that is dropped, or
// whose process is interrupted, leaves no file behind.
//
//===----------------------------------------------------------------------===//

#include "ucp/Formats/Safetensors/Safetensors.h"
#include "ScratchFolder.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <fstream>

using namespace ucp;
using ucp::testing::ScratchFolder;

namespace {

std::vector<TensorInfo> twoTensors() {
  return {{"b.weight", DType::BF16, {4}}, {"a.weight", DType::F32, {2, 3}}};
}

TEST(Safetensors, CommittedFileReadsBack) {
  ScratchFolder folder;
  std::string path = folder.file("out.safetensors");
  {
    auto writer = SafetensorsWriter::create(path, twoTensors());
    ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
    float a[6] = {1, -2, 3.5f, 4, 5, -6};
    uint16_t b[4] = {0x3f80, 0xc000, 0x7fc1, 0x0001};
    std::memcpy((*writer)->getData("a.weight"), a, sizeof(a));
    std::memcpy((*writer)->getData("b.weight"), b, sizeof(b));
    // Until the commit, only a temporary file exists.
    EXPECT_EQ(folder.list().size(), 1u);
    EXPECT_NE(folder.list().front(), "out.safetensors");
    ASSERT_FALSE(bool((*writer)->commit()));
  }
  EXPECT_EQ(folder.list(), std::vector<std::string>{"out.safetensors"});

  auto reader = SafetensorsReader::open(path);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  ASSERT_EQ((*reader)->getTensors().size(), 2u);
  const TensorInfo *a = (*reader)->find("a.weight");
  const TensorInfo *b = (*reader)->find("b.weight");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->dtype, DType::F32);
  EXPECT_EQ(a->shape, (Extents{2, 3}));
  EXPECT_EQ(b->dtype, DType::BF16);
  EXPECT_EQ(b->shape, (Extents{4}));
  float aBack[6];
  uint16_t bBack[4];
  std::memcpy(aBack, (*reader)->getData(*a), sizeof(aBack));
  std::memcpy(bBack, (*reader)->getData(*b), sizeof(bBack));
  EXPECT_EQ(aBack[2], 3.5f);
  EXPECT_EQ(aBack[5], -6.0f);
  EXPECT_EQ(bBack[2], 0x7fc1);
  EXPECT_EQ(bBack[3], 0x0001);
}

TEST(Safetensors, EveryTensorIsAlignedToItsElementSizeWithNoGaps) {
  ScratchFolder folder;
  std::string path = folder.file("mixed.safetensors");
  // Odd element counts: in name order, most tensors would start misaligned.
  std::vector<TensorInfo> tensors = {
      {"a.mask", DType::Bool, {3}},  {"b.bias", DType::BF16, {5}},
      {"c.weight", DType::F32, {7}}, {"d.steps", DType::I64, {1}},
      {"e.scale", DType::F16, {3}},  {"f.table", DType::F64, {3}}};
  {
    auto writer = SafetensorsWriter::create(path, tensors);
    ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
    ASSERT_FALSE(bool((*writer)->commit()));
  }
  auto reader = SafetensorsReader::open(path);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  // Offsets are relative to the data section, and the file is mapped at a
  // page boundary: aligned addresses mean an aligned section and offsets.
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const TensorInfo &tensor : (*reader)->getTensors()) {
    int64_t size = getElementSize(tensor.dtype);
    EXPECT_EQ(tensor.begin % size, 0) << tensor.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*reader)->getData(tensor)) % size,
              0u)
        << tensor.name;
    ranges.push_back({tensor.begin, tensor.end});
  }
  llvm::sort(ranges);
  int64_t next = 0;
  for (auto [begin, end] : ranges) {
    EXPECT_EQ(begin, next);
    next = end;
  }
}

TEST(Safetensors, TensorsOfWholeCacheLinesStartOnALine) {
  ScratchFolder folder;
  std::string path = folder.file("lines.safetensors");
  // Laid out by element size and name, "a.bias" (12 bytes) would come
  // first and push every other tensor off its line, the bf16 "c.weight"
  // (three lines) included.
  std::vector<TensorInfo> tensors = {{"a.bias", DType::F32, {3}},
                                     {"b.weight", DType::F32, {64, 16}},
                                     {"c.weight", DType::BF16, {32, 3}},
                                     {"d.weight", DType::F32, {16}}};
  {
    auto writer = SafetensorsWriter::create(path, tensors);
    ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
    ASSERT_FALSE(bool((*writer)->commit()));
  }
  auto reader = SafetensorsReader::open(path);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  for (llvm::StringRef name : {"b.weight", "c.weight", "d.weight"}) {
    const TensorInfo *tensor = (*reader)->find(name);
    ASSERT_TRUE(tensor);
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*reader)->getData(*tensor)) %
                  kCacheLineBytes,
              0u)
        << name.str();
  }
}

TEST(Safetensors, DroppedWriterLeavesNothing) {
  ScratchFolder folder;
  {
    auto writer =
        SafetensorsWriter::create(folder.file("out.safetensors"), twoTensors());
    ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
    EXPECT_EQ(folder.list().size(), 1u);
  }
  EXPECT_TRUE(folder.list().empty());
}

TEST(SafetensorsDeathTest, InterruptedWriteLeavesNothing) {
  // The child is a fork that shares `folder` with this process.
  GTEST_FLAG_SET(death_test_style, "fast");
  for (int signal : {SIGINT, SIGTERM}) {
    ScratchFolder folder;
    std::string path = folder.file("out.safetensors");
    EXPECT_EXIT(
        {
          auto writer = SafetensorsWriter::create(path, twoTensors());
          if (!writer || folder.list().size() != 1)
            std::_Exit(3);
          std::raise(signal);
          std::_Exit(4);
        },
        ::testing::KilledBySignal(signal), "")
        << "signal " << signal;
    EXPECT_TRUE(folder.list().empty())
        << "signal " << signal << " left " << folder.list().front();
  }
}

/// Opens a file made of `header` and `dataBytes` zero bytes, and returns
/// the error, or "" when it opened.
std::string openFileOf(const ScratchFolder &folder, const std::string &header,
                       size_t dataBytes) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>(uint64_t(header.size()) >> (8 * i));
  bytes += header + std::string(dataBytes, '\0');
  std::string path = folder.file("crafted.safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  auto reader = SafetensorsReader::open(path);
  return reader ? "" : llvm::toString(reader.takeError());
}

TEST(Safetensors, SizesThatOverflowAreRefused) {
  ScratchFolder folder;
  EXPECT_EQ(openFileOf(
                folder,
                R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8),
            "");
  // (2^62 + 1) * 4 bytes wraps around to 4 in 64 bits.
  std::string wrapped = openFileOf(
      folder,
      R"({"w":{"dtype":"F32","shape":[4611686018427387905],"data_offsets":[0,4]}})",
      8);
  EXPECT_NE(wrapped.find("tensor 'w' of shape [4611686018427387905] has data "
                         "offsets that do not fit it or the file"),
            std::string::npos)
      << wrapped;
  // An end offset far below the start.
  EXPECT_NE(openFileOf(folder,
                       R"({"w":{"dtype":"F32","shape":[0],)"
                       R"("data_offsets":[8,-9223372036854775808]}})",
                       8)
                .find("has data offsets that do not fit"),
            std::string::npos);
}

TEST(Safetensors, TensorNamedTwiceIsRefused) {
  ScratchFolder folder;
  // A JSON parser keeps one of two tensors of the same name.
  EXPECT_EQ(
      openFileOf(folder,
                 R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                 8),
      folder.file("crafted.safetensors") +
          ": $: key \"w\" appears twice; JSON readers keep only one of the "
          "two values");
}

TEST(Safetensors, TensorsMustTileTheData) {
  ScratchFolder folder;
  struct Case {
    const char *header;
    size_t dataBytes;
    const char *error; // "" when the file opens.
  };
  const Case cases[] = {
      // Two tensors in either order, back to back, fill the data.
      {R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
       R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
       8, ""},
      // Sharing bytes: both names would read the same data.
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       8, "tensors 'a' and 'b' share bytes 4 to 8 of the data"},
      // A gap between tensors, and bytes after the last one.
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
       12, "bytes 4 to 8 of the data belong to no tensor"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8,
       "bytes 4 to 8 of the data belong to no tensor"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(openFileOf(folder, c.header, c.dataBytes),
              *c.error ? folder.file("crafted.safetensors") + ": " + c.error
                       : "")
        << c.header;
}

} // namespace

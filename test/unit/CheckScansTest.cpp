//===- CheckScansTest.cpp - The check's passes against plain references ---===//
//
// The loops `check` and the jobs run over every byte of a checkpoint, each
// against a plain reference on random data, on both of their builds (the
// AVX2 one and the baseline one, forced with baselineLoopsOnly):
//   - the value scan (ValueScan), whole and in chunks joined in order,
//     against a per-element classification of the bits;
//   - the weight-master comparison (allMatchMasters) against matchesMaster
//     element by element;
//   - reading mapped bytes from their file (readMappedBytes) against the
//     bytes, and a file that changed size refused;
//   - the CRC of a record from the CRCs of ranges a pass read (RangeCrcs)
//     against the CRC of the whole, whatever ranges were recorded.
//
//===----------------------------------------------------------------------===//

#include "ScratchFolder.h"

#include "ucp/Checkpoint/MasterRounding.h"
#include "ucp/Checkpoint/ValueCheck.h"
#include "ucp/Element/FloatBits.h"
#include "ucp/Support/Crc32.h"
#include "ucp/Support/CpuFeatures.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/MappedFileReader.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <unistd.h>

using namespace ucp;

namespace {

/// Runs `body` on the vector loops and on the baseline ones.
template <typename Body> void onBothLoops(Body body) {
  for (bool baseline : {false, true}) {
    SCOPED_TRACE(baseline ? "baseline loops" : "vector loops");
    baselineLoopsOnly().store(baseline);
    body();
  }
  baselineLoopsOnly().store(false);
}

struct FloatType {
  DType type;
  int bytes;
  uint64_t exponent, sign;
};

constexpr FloatType kFloatTypes[] = {
    {DType::F32, 4, 0x7f800000, 0x80000000},
    {DType::BF16, 2, 0x7f80, 0x8000},
    {DType::F16, 2, 0x7c00, 0x8000},
    {DType::F64, 8, 0x7ff0000000000000, 0x8000000000000000}};

/// Random words of `type`: mostly finite positives, with NaNs, infinities,
/// negatives, -0 and negative NaNs sprinkled in at `rate`.
std::vector<char> makeWords(const FloatType &type, int64_t count, double rate,
                            std::mt19937_64 &random) {
  std::vector<char> data(count * type.bytes);
  std::bernoulli_distribution special(rate);
  uint64_t mask = type.bytes == 8 ? ~uint64_t(0)
                                  : (uint64_t(1) << (8 * type.bytes)) - 1;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t word = random() & mask & ~type.sign;
    if ((word & type.exponent) == type.exponent)
      word &= ~(type.exponent & (type.exponent >> 1)); // Finite.
    if (special(random)) {
      switch (random() % 5) {
      case 0: word |= type.exponent; break;                    // NaN or Inf.
      case 1: word |= type.sign; break;                        // Negative.
      case 2: word = type.sign; break;                         // -0.
      case 3: word = type.sign | type.exponent | 1; break;     // -NaN.
      default: word = type.sign | type.exponent; break;        // -Inf.
      }
    }
    std::memcpy(data.data() + i * type.bytes, &word, type.bytes);
  }
  return data;
}

/// The problems of `data` as the definition states them, element by
/// element.
llvm::SmallVector<ValueProblem, 2> referenceProblems(const FloatType &type,
                                                     TensorState state,
                                                     const char *data,
                                                     int64_t count) {
  ValueProblem nonFinite{7, -1, 0, false}, negative{7, -1, 0, true};
  for (int64_t i = 0; i < count; ++i) {
    uint64_t word = 0;
    std::memcpy(&word, data + i * type.bytes, type.bytes);
    bool isNonFinite = (word & type.exponent) == type.exponent;
    bool isNegative = (word & type.sign) && !isNonFinite &&
                      (word & ~type.sign) != 0;
    for (auto [found, problem] : {std::pair{isNonFinite, &nonFinite},
                                  std::pair{isNegative, &negative}})
      if (found && problem->count++ == 0)
        problem->first = i;
  }
  llvm::SmallVector<ValueProblem, 2> problems;
  if (nonFinite.count)
    problems.push_back(nonFinite);
  if (negative.count && state == TensorState::ExpAvgSq)
    problems.push_back(negative);
  return problems;
}

void expectSame(llvm::ArrayRef<ValueProblem> found,
                llvm::ArrayRef<ValueProblem> expected) {
  ASSERT_EQ(found.size(), expected.size());
  for (auto [a, b] : llvm::zip(found, expected)) {
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(a.first, b.first);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.negative, b.negative);
  }
}

TEST(CheckScans, ValueScanMatchesTheDefinitionWholeAndInChunks) {
  std::mt19937_64 random(31);
  onBothLoops([&] {
    for (const FloatType &type : kFloatTypes)
      for (TensorState state : {TensorState::Master, TensorState::ExpAvgSq})
        for (int round = 0; round < 40; ++round) {
          int64_t count = random() % 20000;
          double rate = round % 4 == 0 ? 0.0 : 1.0 / (1 + random() % 3000);
          std::vector<char> data = makeWords(type, count, rate, random);
          auto expected = referenceProblems(type, state, data.data(), count);
          expectSame(findValueProblems(state, type.type, 7, data.data(), count),
                     expected);
          // Cut at random places, scanned part by part, joined in order.
          ValueScan joined(state, type.type, 7), added(state, type.type, 7);
          for (int64_t at = 0; at < count;) {
            int64_t part = std::min<int64_t>(count - at, 1 + random() % 7000);
            ValueScan piece(state, type.type, 7);
            piece.add(data.data() + at * type.bytes, part);
            joined.append(piece);
            added.add(data.data() + at * type.bytes, part);
            at += part;
          }
          expectSame(joined.getProblems(), expected);
          expectSame(added.getProblems(), expected);
        }
  });
}

TEST(CheckScans, WeightsAgainstMastersMatchTheElementwiseDefinition) {
  std::mt19937_64 random(5);
  std::uniform_real_distribution<float> values(-4.0f, 4.0f);
  onBothLoops([&] {
    for (DType type : {DType::BF16, DType::F32, DType::F16})
      for (int round = 0; round < 60; ++round) {
        int64_t count = 1 + random() % 5000, size = getElementSize(type);
        std::vector<float> masters(count);
        std::vector<char> weights(count * size);
        for (int64_t i = 0; i < count; ++i) {
          masters[i] = random() % 50 == 0 ? std::nanf("") : values(random);
          uint32_t bits = ucpFloatToBits(masters[i]);
          uint16_t half = type == DType::BF16 ? ucpFloatToBfloat(masters[i])
                                              : ucpFloatToHalf(masters[i]);
          std::memcpy(weights.data() + i * size,
                      type == DType::F32 ? static_cast<const void *>(&bits)
                                         : &half,
                      size);
        }
        // Some rounds break one element: its bits, or a NaN weight for a
        // number.
        if (round % 3 != 0) {
          int64_t i = random() % count;
          weights[i * size] ^= char(1 + random() % 255);
          if (round % 3 == 2)
            std::memset(weights.data() + i * size, 0xff, size);
        }
        bool expected = true;
        for (int64_t i = 0; i < count; ++i)
          expected &= matchesMaster(type, weights.data() + i * size,
                                    masters[i]);
        EXPECT_EQ(allMatchMasters(type, weights.data(),
                                  reinterpret_cast<const char *>(
                                      masters.data()),
                                  count),
                  expected)
            << "round " << round;
        if (round % 3 == 0) {
          EXPECT_TRUE(expected); // The rounding is the writer's.
        }
      }
  });
}

/// A file of `bytes` random bytes in `folder`, and them.
std::string writeRandomFile(const ucp::testing::ScratchFolder &folder,
                            llvm::StringRef name, size_t bytes,
                            std::vector<char> &data) {
  std::mt19937_64 random(bytes);
  data.resize(bytes);
  for (char &byte : data)
    byte = char(random());
  std::string path = folder.file(name);
  std::error_code error;
  llvm::raw_fd_ostream out(path, error);
  EXPECT_FALSE(error);
  out.write(data.data(), data.size());
  return path;
}

TEST(CheckScans, MappedBytesReadFromTheirFileInChunks) {
  ucp::testing::ScratchFolder folder;
  std::vector<char> data;
  std::string path = writeRandomFile(folder, "bytes", (3 << 20) + 123, data);
  auto buffer = readInputFile(path, {false, std::nullopt});
  ASSERT_TRUE(bool(buffer)) << llvm::toString(buffer.takeError());
  ASSERT_EQ((*buffer)->getBufferKind(), llvm::MemoryBuffer::MemoryBuffer_MMap);
  const char *start = (*buffer)->getBufferStart();
  for (auto [from, bytes, chunk] :
       {std::tuple<size_t, size_t, size_t>{0, data.size(), 1 << 18},
        {4097, (2 << 20) + 5, 1000}, {data.size() - 10, 10, 1 << 20},
        {100, 0, 64}}) {
    std::string read;
    size_t expectedOffset = 0;
    llvm::Error error = readMappedBytes(
        buffer->get(), start + from, bytes, chunk,
        [&](llvm::StringRef piece, size_t offset) {
          EXPECT_EQ(offset, expectedOffset);
          EXPECT_LE(piece.size(), chunk);
          // Read into memory of its own, not the mapping.
          EXPECT_TRUE(piece.data() < start ||
                      piece.data() >= (*buffer)->getBufferEnd());
          expectedOffset += piece.size();
          read += piece;
        });
    ASSERT_FALSE(bool(error)) << llvm::toString(std::move(error));
    EXPECT_EQ(read, std::string(data.data() + from, bytes));
  }
  // Bytes in memory are handed over as they are.
  auto memory = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(data.data(), data.size()), "memory", false);
  size_t chunks = 0;
  llvm::Error inMemory = readMappedBytes(
      memory.get(), data.data() + 10, 5000, 1024,
      [&](llvm::StringRef piece, size_t offset) {
        EXPECT_EQ(piece.data(), data.data() + 10 + offset);
        ++chunks;
      });
  EXPECT_FALSE(bool(inMemory));
  EXPECT_EQ(chunks, 5u);
  // A file no longer the size mapped is refused, named.
  ASSERT_EQ(::truncate(path.c_str(), data.size() / 2), 0);
  llvm::Error changed = readMappedBytes(buffer->get(), start, 10, 10,
                                        [](llvm::StringRef, size_t) {});
  std::string message = llvm::toString(std::move(changed));
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("changed while it was read"), std::string::npos)
      << message;
}

TEST(CheckScans, RecordCrcsFromTheRangesAPassReadEqualTheWhole) {
  ucp::testing::ScratchFolder folder;
  std::vector<char> data;
  std::string path = writeRandomFile(folder, "records", 9 << 20, data);
  auto buffer = readInputFile(path, {false, std::nullopt});
  ASSERT_TRUE(bool(buffer)) << llvm::toString(buffer.takeError());
  const char *start = (*buffer)->getBufferStart();
  std::mt19937_64 random(17);
  auto crcOf = [&](uint64_t offset, uint64_t length) {
    return computeCrc32(llvm::StringRef(data.data() + offset, length));
  };
  for (int round = 0; round < 30; ++round) {
    uint64_t begin = random() % (1 << 20);
    uint64_t end = data.size() - random() % (1 << 20);
    RangeCrcs known;
    // Ranges inside, overlapping one another, and reaching outside.
    for (int r = 0, ranges = random() % 12; r < ranges; ++r) {
      uint64_t offset = random() % data.size();
      uint64_t length =
          std::min<uint64_t>(data.size() - offset, random() % (3 << 20));
      known.add(path, offset, length, crcOf(offset, length));
    }
    known.add(path + "-other", begin, end - begin, 0); // Another file's.
    llvm::Expected<uint32_t> crc = known.compute(
        **buffer, llvm::StringRef(start + begin, end - begin));
    ASSERT_TRUE(bool(crc)) << llvm::toString(crc.takeError());
    EXPECT_EQ(*crc, crcOf(begin, end - begin)) << "round " << round;
  }
  // A recorded CRC is used, not read again: bytes that read otherwise
  // during the pass (a bit flipped then) show in the record's CRC.
  RangeCrcs flipped;
  flipped.add(path, 4096, 8192, crcOf(4096, 8192) ^ 1);
  llvm::Expected<uint32_t> crc =
      flipped.compute(**buffer, llvm::StringRef(start, data.size()));
  ASSERT_TRUE(bool(crc));
  EXPECT_NE(*crc, crcOf(0, data.size()));
  EXPECT_EQ(*computeMappedCrc32(buffer->get(),
                                llvm::StringRef(start, data.size())),
            crcOf(0, data.size()));
}

} // namespace

//===- ExecutorTest.cpp - Copy programs on the CPU, bit for bit -----------===//
//
// Lowered plans run by the CPU executor produce exactly the bytes an
// element-by-element reference produces, for random layouts and every
// element size, with any number of threads; power-of-two scales round-trip
// bit-exactly in f32, bf16 and f16 (spec §8.3).
//
//===----------------------------------------------------------------------===//

#include "RandomMaps.h"
#include "RandomPlans.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Compose.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

using namespace ucp;
using namespace ucp::testing;

namespace {

using Bytes = std::vector<uint8_t>;

/// Runs `plan` element by element on bytes (no scaling).
std::map<int64_t, Bytes> referenceRun(const TransferPlan &plan,
                                      const std::map<int64_t, Bytes> &sources,
                                      int64_t size) {
  std::map<int64_t, Bytes> targets;
  for (const auto &[rank, shape] : plan.targetShards)
    targets[rank].assign(getNumElements(shape).value_or(0) * size, 0xAB);
  for (const Segment &s : plan.segments)
    forEachElement(s.shape, {s.source, s.target},
                   [&](llvm::ArrayRef<int64_t> at) {
                     std::memcpy(&targets[s.targetRank][at[1] * size],
                                 &sources.at(s.sourceRank)[at[0] * size], size);
                   });
  for (const Fill &f : plan.fills)
    forEachElement(f.shape, {f.target}, [&](llvm::ArrayRef<int64_t> at) {
      std::memset(&targets[f.rank][at[0] * size], 0, size);
    });
  return targets;
}

std::map<int64_t, Bytes> executeWithCpu(const TransferPlan &plan,
                                        std::map<int64_t, Bytes> &sources,
                                        DType type, unsigned threads,
                                        int power = 1) {
  int64_t size = getElementSize(type);
  std::map<int64_t, Bytes> targets;
  ProgramBuffers buffers;
  for (auto &[rank, data] : sources)
    buffers.sources[rank] = data.data();
  for (const auto &[rank, shape] : plan.targetShards) {
    targets[rank].assign(getNumElements(shape).value_or(0) * size, 0xAB);
    buffers.targets[rank] = targets[rank].data();
  }
  // Every thread asked for runs, however small the plan.
  CopyProgram program = lowerPlan(plan);
  executeOnCpu({&program, buffers, type, power}, threads,
               /*bytesPerThread=*/1);
  return targets;
}

/// 1,000 random layouts x every dtype x (extract, rebuild, reshard between
/// random world sizes), against the element-by-element reference.
TEST(CpuExecutor, RandomPlansMatchTheReferenceForEveryDType) {
  std::mt19937_64 rng(41);
  for (int i = 0; i < 1000; ++i) {
    Extents shape;
    for (int64_t d = 0, rank = 1 + rng() % 3; d < rank; ++d)
      shape.push_back(1 + rng() % 7);
    ParamMap source = makeRandomMapOf(rng, shape, 5, {1.0});
    ParamMap target = makeRandomMapOf(rng, shape, 5, {1.0});
    const std::pair<const ParamMap *, ParamMap> jobs[] = {
        {&source, target},                   // reshard
        {nullptr, source},                   // extract
        {&source, getFullTensorMap(source)}, // rebuild
    };
    for (const auto &[from, to] : jobs) {
      ParamMap full = getFullTensorMap(source);
      SentElements sent;
      llvm::Expected<TransferPlan> plan =
          composeMaps(from ? *from : full, to, {}, sent);
      ASSERT_TRUE(static_cast<bool>(plan));
      for (DType type : kAllDTypes) {
        int64_t size = getElementSize(type);
        std::map<int64_t, Bytes> sources;
        for (const auto &[rank, shard] : plan->sourceShards) {
          Bytes &data = sources[rank];
          data.resize(getNumElements(shard).value_or(0) * size);
          for (uint8_t &b : data)
            b = rng();
        }
        EXPECT_EQ(executeWithCpu(*plan, sources, type, 1 + i % 3),
                  referenceRun(*plan, sources, size))
            << "iteration " << i << " " << getSafetensorsName(type).str();
        if (HasFailure())
          return;
      }
    }
  }
}

TEST(CpuExecutor, HugeCopiesAreSplitAndStillExact) {
  // A row split of 16M elements: copies above kMaxCopyElements.
  ParamMap source = *buildSplitLayout("w", {4096, 4096}, 0, {2048, 2048});
  ParamMap target =
      *buildSplitLayout("w", {4096, 4096}, 1, {1024, 1024, 1024, 1024});
  SentElements sent;
  TransferPlan plan = *composeMaps(source, target, {}, sent);
  CopyProgram program = lowerPlan(plan);
  size_t copies = 0;
  for (const BufferPairCopies &pair : program.pairs)
    copies += pair.copies.size();
  EXPECT_GT(copies, plan.segments.size());
  std::map<int64_t, Bytes> sources;
  for (const auto &[rank, shard] : plan.sourceShards) {
    Bytes &data = sources[rank];
    data.resize(*getNumElements(shard) * 4);
    for (size_t b = 0; b < data.size(); ++b)
      data[b] = static_cast<uint8_t>(b * 2654435761u >> 13);
  }
  EXPECT_EQ(executeWithCpu(plan, sources, DType::F32, 2),
            referenceRun(plan, sources, 4));
}

TEST(CpuExecutor, ShortRunCopiesRunInBandsAndStayExact) {
  // A column split whose shard rows are 64 bytes: copies with short runs,
  // run in many bands of rows, by 1 and 2 threads.
  ParamMap target = *buildSplitLayout("w", {16384, 64}, 1, {16, 16, 16, 16});
  SentElements sent;
  TransferPlan plan = *composeMaps(getFullTensorMap(target), target, {}, sent);
  std::map<int64_t, Bytes> sources;
  Bytes &data = sources[0];
  data.resize(16384 * 64 * 4);
  for (size_t b = 0; b < data.size(); ++b)
    data[b] = static_cast<uint8_t>(b * 2654435761u >> 11);
  std::map<int64_t, Bytes> expected = referenceRun(plan, sources, 4);
  EXPECT_EQ(executeWithCpu(plan, sources, DType::F32, 1), expected);
  EXPECT_EQ(executeWithCpu(plan, sources, DType::F32, 2), expected);
}

TEST(CpuExecutor, StreamedCopiesWithUnalignedEdgesStayExact) {
  // Copies over 1 MiB stream their runs. Runs of 129 and 128 elements
  // (short: 16-byte vectors), of 1025 and 1024 elements (long: 32-byte
  // vectors where the processor has AVX2) and of 8206 and 8205 elements (16
  // KiB and more from 2-byte elements on: blocks of four 4 KiB chunks, then
  // a tail) start anywhere in a vector, so runs have heads and tails, for
  // element sizes 1 to 8.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{8200, 257},
                            std::pair<int64_t, int64_t>{1100, 2049},
                            std::pair<int64_t, int64_t>{130, 16411}}) {
    ParamMap target =
        *buildSplitLayout("w", {rows, cols}, 1, {(cols + 1) / 2, cols / 2});
    ParamMap full = getFullTensorMap(target);
    SentElements sent;
    TransferPlan extract = *composeMaps(full, target, {}, sent);
    TransferPlan rebuild = *composeMaps(target, full, {}, sent);
    for (DType type : kOneDTypePerSize) {
      std::string name =
          getSafetensorsName(type).str() + " cols " + std::to_string(cols);
      int64_t size = getElementSize(type);
      std::map<int64_t, Bytes> sources;
      Bytes &data = sources[0];
      data.resize(rows * cols * size);
      for (size_t b = 0; b < data.size(); ++b)
        data[b] = static_cast<uint8_t>(b * 2654435761u >> 9);
      std::map<int64_t, Bytes> shards =
          executeWithCpu(extract, sources, type, 2);
      EXPECT_EQ(shards, referenceRun(extract, sources, size)) << name;
      EXPECT_EQ(executeWithCpu(rebuild, shards, type, 1), sources) << name;
    }
  }
}

TEST(CpuExecutor, StreamedRunsStayExactAtEveryTargetAlignment) {
  // Streamed runs shorter than 1 KiB that are whole lines starting on a line
  // move with one 64-byte store per line where the processor has AVX-512, a
  // block of rows in one loop, or row by row across the shards of a column
  // split; others with 16-byte stores. Runs of 1 to 16 KiB go four at a time,
  // a line of each in turn, when they are whole lines and their targets
  // 32-byte aligned; other runs, and the last runs of a copy, one at a time.
  // Row counts that are not a multiple of four, runs of 256 and 272 bytes, of
  // 4 KiB, 1 KiB and 1056 bytes (the odd ones not whole lines), blocks of rows
  // in a third dimension (a reshard from a split of dimension 1 to one of
  // dimension 2), target rows of which only every fourth starts on a line (a
  // reshard from shards of 64 and 72 columns to two of 68), and targets at 0,
  // 16 and 32 bytes past a line cover every way, with four shards of 256-byte
  // rows (below); aligned targets also on two threads.
  auto halves = [](Extents shape, int64_t dim) {
    return *buildSplitLayout("w", shape, dim, {shape[dim] / 2, shape[dim] / 2});
  };
  std::vector<std::pair<ParamMap, ParamMap>> jobs;
  for (Extents shape :
       {Extents{4097, 128}, Extents{4097, 136}, Extents{1027, 2048},
        Extents{4099, 512}, Extents{4003, 528}}) {
    ParamMap target = halves(shape, 1);
    jobs.push_back({getFullTensorMap(target), target});
  }
  // Four shards of 256-byte rows: their bands run row by row, a run of each
  // shard in turn. Shards of 64, 80, 48 and 64 columns, whole lines each,
  // are cut into bands of different rows, which run one by one.
  for (Extents columns : {Extents{64, 64, 64, 64}, Extents{64, 80, 48, 64}}) {
    ParamMap target = *buildSplitLayout("w", {8193, 256}, 1, columns);
    jobs.push_back({getFullTensorMap(target), target});
  }
  jobs.push_back({halves({128, 64, 128}, 1), halves({128, 64, 128}, 2)});
  jobs.push_back({*buildSplitLayout("w", {4097, 136}, 1, {64, 72}),
                  halves({4097, 136}, 1)});
  for (const auto &[from, to] : jobs) {
    SentElements sent;
    TransferPlan plan = *composeMaps(from, to, {}, sent);
    CopyProgram program = lowerPlan(plan);
    std::map<int64_t, Bytes> sources;
    for (const auto &[rank, shard] : plan.sourceShards) {
      Bytes &data = sources[rank];
      data.resize(*getNumElements(shard) * 4);
      for (size_t b = 0; b < data.size(); ++b)
        data[b] = static_cast<uint8_t>((b + rank) * 2654435761u >> 7);
    }
    std::map<int64_t, Bytes> expected = referenceRun(plan, sources, 4);
    std::string name = formatList(to.logicalShape) + " from " +
                       std::to_string(from.worldSize) + " ranks";
    for (auto [offset, threads] :
         {std::pair<uintptr_t, unsigned>{0, 1}, {16, 1}, {32, 1}, {0, 2}}) {
      std::map<int64_t, Bytes> storage;
      ProgramBuffers buffers;
      for (auto &[rank, data] : sources)
        buffers.sources[rank] = data.data();
      for (const auto &[rank, bytes] : expected) {
        storage[rank].assign(bytes.size() + 64 + offset, 0xAB);
        uintptr_t base = reinterpret_cast<uintptr_t>(storage[rank].data());
        buffers.targets[rank] =
            storage[rank].data() + (64 - base % 64) % 64 + offset;
      }
      executeOnCpu({&program, buffers, DType::F32}, threads,
                   /*bytesPerThread=*/1);
      for (const auto &[rank, bytes] : expected) {
        const uint8_t *written =
            static_cast<const uint8_t *>(buffers.targets.at(rank));
        EXPECT_EQ(Bytes(written, written + bytes.size()), bytes)
            << name << ", offset " << offset << ", threads " << threads
            << ", rank " << rank;
      }
    }
  }
}

/// full -> pre-divided shards -> full again, bit for bit.
TEST(CpuExecutor, PowerOfTwoScalesRoundTripExactly) {
  std::mt19937_64 rng(43);
  for (DType type :
       {DType::F32, DType::BF16, DType::F16, DType::F8E4M3, DType::F8E5M2}) {
    for (int64_t tp : {2, 4, 8, 16}) {
      ParamMap bias = llvm::cantFail(buildScaledBiasLayout("bias", {257}, tp));
      ParamMap full = getFullTensorMap(bias);
      SentElements sent;
      TransferPlan extract = *composeMaps(full, bias, {}, sent);
      TransferPlan rebuild = *composeMaps(bias, full, {}, sent);
      int64_t size = getElementSize(type);
      std::map<int64_t, Bytes> original;
      Bytes &data = original[0];
      data.resize(257 * size);
      for (size_t e = 0; e < 257; ++e) {
        // Normal values of moderate size (no overflow or underflow).
        float value = std::ldexp(1.0f + (rng() % 1000) / 1000.0f,
                                 static_cast<int>(rng() % 16) - 8) *
                      ((rng() & 1) ? -1.0f : 1.0f);
        if (type == DType::F32) {
          std::memcpy(&data[e * 4], &value, 4);
        } else if (size == 1) {
          // Exponent fields 5 to 14: normal still when divided by 16, and
          // never e4m3's NaN.
          data[e] =
              uint8_t((rng() & 0x80) |
                      (5 + rng() % 10) << (type == DType::F8E4M3 ? 3 : 2) |
                      rng() % (type == DType::F8E4M3 ? 8 : 4));
        } else {
          uint32_t bits;
          std::memcpy(&bits, &value, 4);
          // Truncated to 16 bits: exactly representable in bf16; for f16 use
          // a value with few mantissa bits in range.
          uint16_t half = type == DType::BF16
                              ? uint16_t(bits >> 16)
                              : uint16_t(0x3c00 | (rng() % 0x3ff)) |
                                    uint16_t((rng() & 1) << 15);
          std::memcpy(&data[e * 2], &half, 2);
        }
      }
      std::map<int64_t, Bytes> shards =
          executeWithCpu(extract, original, type, 2);
      // The shards hold full / tp.
      EXPECT_NE(shards[0], original[0]) << getSafetensorsName(type).str();
      std::map<int64_t, Bytes> back = executeWithCpu(rebuild, shards, type, 2);
      EXPECT_EQ(back[0], original[0])
          << getSafetensorsName(type).str() << " tp " << tp;
    }
  }
}

TEST(CpuExecutor, TensorStatePowersInvertTheScale) {
  // A shard of 8.0 at scale 0.25 rebuilds to 32, 2 and 0.5 for powers 1, -1
  // and -2 (deepspeed-facts §2).
  ParamMap bias = llvm::cantFail(buildScaledBiasLayout("bias", {4}, 4));
  SentElements sent;
  TransferPlan rebuild = *composeMaps(bias, getFullTensorMap(bias), {}, sent);
  for (auto [power, expected] :
       {std::pair{1, 32.0f}, std::pair{-1, 2.0f}, std::pair{-2, 0.5f}}) {
    std::map<int64_t, Bytes> shards;
    for (int64_t r = 0; r < 4; ++r) {
      float values[4] = {8, 8, 8, 8};
      shards[r].assign(reinterpret_cast<uint8_t *>(values),
                       reinterpret_cast<uint8_t *>(values) + 16);
    }
    std::map<int64_t, Bytes> full =
        executeWithCpu(rebuild, shards, DType::F32, 1, power);
    float first;
    std::memcpy(&first, full[0].data(), 4);
    EXPECT_EQ(first, expected) << "power " << power;
  }
}

/// Tensors in a safetensors file need not be aligned to their element size
/// (the format does not require it): buffers one byte off alignment get the
/// same bytes as aligned ones, scales and fills included.
TEST(CpuExecutor, MisalignedBuffersGetTheSameBytes) {
  std::mt19937_64 rng(43);
  for (DType type : kAllDTypes) {
    int64_t size = getElementSize(type);
    for (const TransferPlan &plan : makeExecutionPlans(rng, type, 20)) {
      CopyProgram program = lowerPlan(plan);
      // The shifted buffers live one byte into storage one byte longer.
      std::map<int64_t, Bytes> sources, shiftedSources, aligned, shifted;
      ProgramBuffers alignedBuffers, shiftedBuffers;
      for (const auto &[rank, elements] : program.sourceElements) {
        Bytes &data = sources[rank];
        data.resize(elements * size);
        for (uint8_t &b : data)
          b = rng();
        shiftedSources[rank].push_back(0);
        llvm::append_range(shiftedSources[rank], data);
        alignedBuffers.sources[rank] = data.data();
        shiftedBuffers.sources[rank] = shiftedSources[rank].data() + 1;
      }
      for (const auto &[rank, elements] : program.targetElements) {
        aligned[rank].assign(elements * size, 0xAB);
        shifted[rank].assign(elements * size + 1, 0xAB);
        alignedBuffers.targets[rank] = aligned[rank].data();
        shiftedBuffers.targets[rank] = shifted[rank].data() + 1;
      }
      for (unsigned threads : {1u, 2u}) {
        executeOnCpu({&program, alignedBuffers, type}, threads, 1);
        executeOnCpu({&program, shiftedBuffers, type}, threads, 1);
        for (const auto &[rank, data] : aligned)
          ASSERT_EQ(Bytes(shifted[rank].begin() + 1, shifted[rank].end()), data)
              << getSafetensorsName(type).str() << " target " << rank;
      }
    }
  }
}

/// Halves {quiet NaN, signaling NaN, 2.0} of `type`, given as bits, and
/// expects `halved`.
template <typename Bits>
void expectHalved(DType type, std::array<Bits, 3> bits,
                  std::array<Bits, 3> halved) {
  scaleElements(type, bits.data(), 3, 0.5);
  EXPECT_EQ(bits, halved) << getSafetensorsName(type).str();
}

/// A scaled NaN keeps its bits, quiet or signaling, in every floating-point
/// type (the CUDA kernels share this arithmetic, so both executors write
/// the same bytes); the finite 2.0 next to it halves.
TEST(CpuExecutor, ScaledNaNsKeepTheirBits) {
  expectHalved<uint64_t>(
      DType::F64, {0x7ff8000000000001, 0xfff0000000000001, 0x4000000000000000},
      {0x7ff8000000000001, 0xfff0000000000001, 0x3ff0000000000000});
  expectHalved<uint32_t>(DType::F32, {0x7fc00001, 0xffa00000, 0x40000000},
                         {0x7fc00001, 0xffa00000, 0x3f800000});
  expectHalved<uint16_t>(DType::F16, {0x7e01, 0xfd00, 0x4000},
                         {0x7e01, 0xfd00, 0x3c00});
  expectHalved<uint16_t>(DType::BF16, {0x7fc1, 0xff81, 0x4000},
                         {0x7fc1, 0xff81, 0x3f80});
  expectHalved<uint8_t>(DType::F8E4M3, {0x7f, 0xff, 0x40}, {0x7f, 0xff, 0x38});
  expectHalved<uint8_t>(DType::F8E5M2, {0x7d, 0xfe, 0x40}, {0x7d, 0xfe, 0x3c});
}

} // namespace

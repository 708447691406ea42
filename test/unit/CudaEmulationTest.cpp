//===- CudaEmulationTest.cpp - Generated kernels, run on the host ---------===//
//
// The CUDA emitted for random plans of every element type, compiled for the
// host (CudaHostEmulation.h), writes exactly the bytes the CPU executor
// writes: on the grid the CUDA executor launches and on a grid of 2 blocks
// of 3 threads, where every thread walks the grid-stride loop, and with
// units decoded in 64 bits as well as 32.
//
//===----------------------------------------------------------------------===//

#include "CudaHostEmulation.h"
#include "RandomMaps.h"
#include "RandomPlans.h"

#include <gtest/gtest.h>

#include <cstring>
#include <regex>
#include <set>

using namespace ucp;
using namespace ucp::testing;

namespace {

using Bytes = std::vector<uint8_t>;

/// Target buffers of `program`, each filled with 0xAB (a GPU allocation is
/// not zeroed either), and `buffers` pointing at them and at `sources`.
std::map<int64_t, Bytes> makeTargets(const CopyProgram &program,
                                     std::map<int64_t, Bytes> &sources,
                                     int64_t size, ProgramBuffers &buffers) {
  std::map<int64_t, Bytes> targets;
  for (auto &[rank, data] : sources)
    buffers.sources[rank] = data.data();
  for (const auto &[rank, elements] : program.targetElements) {
    targets[rank].assign(elements * size, 0xAB);
    buffers.targets[rank] = targets[rank].data();
  }
  return targets;
}

TEST(CudaEmulation, GeneratedKernelsMatchTheCpuExecutor) {
  std::mt19937_64 rng(97);
  // A descriptor that moves one or two 16-byte vectors per unit:
  // `{begin, rank, vectors, src, dst, {`.
  const std::regex vectorDescriptor(
      "\\{[0-9]+LL, [0-9]+, ([12]), -?[0-9]+, [0-9]+, \\{");
  std::set<std::string> vectorsPerUnit;
  for (DType type : kAllDTypes) {
    std::string name = getSafetensorsName(type).str();
    int64_t size = getElementSize(type);
    std::vector<TransferPlan> plans = makeExecutionPlans(rng, type);
    std::vector<std::pair<std::string, CopyProgram>> programs;
    for (const TransferPlan &plan : plans)
      programs.push_back(
          {"plan " + std::to_string(programs.size()), lowerPlan(plan)});
    CudaModule module = llvm::cantFail(emitCuda(programs, type));
    EXPECT_TRUE(std::regex_search(module.source, vectorDescriptor)) << name;
    for (std::sregex_iterator
             it(module.source.begin(), module.source.end(), vectorDescriptor),
         end;
         it != end; ++it)
      vectorsPerUnit.insert((*it)[1]);
    llvm::Expected<HostCudaModule> host = HostCudaModule::compile(module);
    ASSERT_TRUE(static_cast<bool>(host))
        << name << ": " << llvm::toString(host.takeError());
    // The same kernels decoding units in 64 bits, as launches of 2^32 units
    // or more do (too many to run here): the decoding does not depend on
    // the type, so one type of each size is enough.
    bool checkWide = llvm::is_contained(kOneDTypePerSize, type);
    std::optional<HostCudaModule> wide;
    if (checkWide) {
      llvm::Expected<HostCudaModule> compiled = HostCudaModule::compile(
          llvm::cantFail(emitCuda(programs, type, CudaUnitIndex::Wide)));
      ASSERT_TRUE(static_cast<bool>(compiled))
          << name << ": " << llvm::toString(compiled.takeError());
      wide.emplace(std::move(*compiled));
    }
    for (size_t i = 0; i < programs.size(); ++i) {
      const CopyProgram &program = programs[i].second;
      std::map<int64_t, Bytes> sources;
      for (const auto &[rank, elements] : program.sourceElements) {
        Bytes &data = sources[rank];
        data.resize(elements * size);
        for (uint8_t &b : data)
          b = rng();
      }
      ProgramBuffers cpu, gpu, strided;
      std::map<int64_t, Bytes> expected =
          makeTargets(program, sources, size, cpu);
      std::map<int64_t, Bytes> onGrid =
          makeTargets(program, sources, size, gpu);
      std::map<int64_t, Bytes> onSmallGrid =
          makeTargets(program, sources, size, strided);
      executeOnCpu({&program, cpu, type}, 1);
      host->run(i, gpu);
      host->run(i, strided, CudaGrid{2, 3});
      EXPECT_EQ(onGrid, expected) << name << " plan " << i;
      EXPECT_EQ(onSmallGrid, expected) << name << " plan " << i;
      if (wide) {
        ProgramBuffers wideIndex;
        std::map<int64_t, Bytes> withWideIndex =
            makeTargets(program, sources, size, wideIndex);
        wide->run(i, wideIndex, CudaGrid{2, 3});
        EXPECT_EQ(withWideIndex, expected) << name << " plan " << i;
      }
      if (HasFailure())
        return;
    }
  }
  // Both unit widths ran.
  EXPECT_EQ(vectorsPerUnit, (std::set<std::string>{"1", "2"}));
}

} // namespace

namespace {

/// Copies and fills of more dimensions than a kernel descriptor holds are
/// split in lowering, and every executor moves them exactly: the CPU
/// executor and the generated kernels on the host against the element by
/// element reference. The kernels truncated such copies to 8 dimensions.
TEST(CudaEmulation, CopiesOfAnyRankAreExact) {
  std::mt19937_64 rng(5);
  for (size_t rank : {8u, 9u, 10u, 12u}) {
    TransferPlan plan = makeDeepPlan(rank);
    CopyProgram program = lowerPlan(plan);
    for (const BufferPairCopies &pair : program.pairs)
      for (const StridedCopy &copy : pair.copies)
        ASSERT_LE(copy.shape.size(), kMaxCopyRank) << rank;
    for (const StridedFill &fill : program.fills)
      ASSERT_LE(fill.shape.size(), kMaxCopyRank) << rank;

    int64_t elements = program.sourceElements.at(0);
    std::vector<double> markers = makeMarkers(elements, rng);
    std::map<int64_t, std::vector<double>> reference =
        applyPlan(plan, {{0, markers}}, /*fillValue=*/0.0);
    std::map<int64_t, Bytes> sources;
    sources[0].resize(elements * sizeof(double));
    std::memcpy(sources[0].data(), markers.data(), sources[0].size());
    Bytes expected(reference.at(0).size() * sizeof(double));
    std::memcpy(expected.data(), reference.at(0).data(), expected.size());

    ProgramBuffers cpu, gpu;
    std::map<int64_t, Bytes> onCpu = makeTargets(program, sources, 8, cpu);
    std::map<int64_t, Bytes> onGpu = makeTargets(program, sources, 8, gpu);
    executeOnCpu({&program, cpu, DType::F64}, 1);
    EXPECT_EQ(onCpu.at(0), expected) << "CPU, rank " << rank;
    llvm::Expected<HostCudaModule> host = HostCudaModule::compile(
        llvm::cantFail(emitCuda({{"deep", program}}, DType::F64)));
    ASSERT_TRUE(static_cast<bool>(host)) << llvm::toString(host.takeError());
    host->run(0, gpu, CudaGrid{2, 3});
    EXPECT_EQ(onGpu.at(0), expected) << "CUDA on the host, rank " << rank;
  }
}

/// What the descriptors cannot hold is refused, never truncated.
TEST(CudaEmulation, EmitRefusesCopiesDeeperThanTheDescriptors) {
  TransferPlan plan = makeDeepPlan(10);
  CopyProgram program;
  program.sourceElements = {{0, 0}};
  program.targetElements = {{0, 0}};
  const Segment &segment = plan.segments.front();
  program.pairs.push_back(
      {0, 0, {{segment.shape, segment.source, segment.target, 1.0}}});
  llvm::Expected<CudaModule> module = emitCuda({{"deep", program}}, DType::F32);
  ASSERT_FALSE(static_cast<bool>(module));
  EXPECT_EQ(llvm::toString(module.takeError()),
            "parameter 'deep': a copy of 10 dimensions, more than the 8 a "
            "kernel descriptor holds (lowerPlan splits them)");
}

} // namespace

//===- CudaEmulationTest.cpp - Generated kernels, run on the host ---------===//
//
// The CUDA emitted for random plans of every element type, compiled for the
// host (CudaHostEmulation.h), writes exactly the bytes the CPU executor
// writes: on the grid the CUDA executor launches and on a grid of 2 blocks
// of 3 threads, where every thread walks the grid-stride loop.
//
//===----------------------------------------------------------------------===//

#include "CudaHostEmulation.h"
#include "RandomMaps.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Plan/Compose.h"

#include <gtest/gtest.h>

#include <regex>

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

/// Plans for one element type: random layouts (with scales where the type
/// is floating point) between random world sizes, extracts and rebuilds,
/// plus a padded vocabulary (fills) and 16-byte aligned splits (vectors).
std::vector<TransferPlan> makePlans(std::mt19937_64 &rng, DType type) {
  std::vector<double> scales = {1.0};
  if (isFloatingPoint(type))
    scales = {1.0, 1.0, 0.5, 0.25, 3.0};
  const int64_t extents[] = {1, 2, 3, 5, 7, 8, 16, 32};
  std::vector<TransferPlan> plans;
  SentElements sent;
  for (int i = 0; i < 60; ++i) {
    Extents shape;
    for (int64_t d = 0, rank = 1 + rng() % 3; d < rank; ++d)
      shape.push_back(extents[rng() % std::size(extents)]);
    ParamMap source = makeRandomMapOf(rng, shape, 5, scales);
    ParamMap target = makeRandomMapOf(rng, shape, 5, scales);
    ParamMap full = getFullTensorMap(source);
    switch (i % 3) {
    case 0:
      plans.push_back(*composeMaps(source, target, {}, sent));
      break;
    case 1:
      plans.push_back(*composeMaps(full, source, {}, sent));
      break;
    default:
      plans.push_back(*composeMaps(source, full, {}, sent));
      break;
    }
  }
  plans.push_back(*composeMaps(buildPaddedVocabLayout("embed", 13, 16, 4),
                               buildPaddedVocabLayout("embed", 13, 16, 2), {},
                               sent));
  ParamMap columns = *buildSplitLayout("w", {8, 64}, 1, {16, 16, 16, 16});
  ParamMap rows = *buildSplitLayout("w", {8, 64}, 0, {4, 4});
  plans.push_back(*composeMaps(getFullTensorMap(columns), columns, {}, sent));
  plans.push_back(*composeMaps(columns, rows, {}, sent));
  return plans;
}

TEST(CudaEmulation, GeneratedKernelsMatchTheCpuExecutor) {
  std::mt19937_64 rng(97);
  const DType types[] = {DType::F64,    DType::F32,    DType::F16, DType::BF16,
                         DType::F8E4M3, DType::F8E5M2, DType::I64, DType::I32,
                         DType::I16,    DType::I8,     DType::U8,  DType::Bool};
  // A descriptor that moves 16-byte vectors: `{begin, rank, 1, {`.
  const std::regex vectorDescriptor("\\{[0-9]+LL, [0-9]+, 1, \\{");
  for (DType type : types) {
    std::string name = getSafetensorsName(type).str();
    int64_t size = getElementSize(type);
    std::vector<TransferPlan> plans = makePlans(rng, type);
    std::vector<std::pair<std::string, CopyProgram>> programs;
    for (const TransferPlan &plan : plans)
      programs.push_back(
          {"plan " + std::to_string(programs.size()), lowerPlan(plan)});
    CudaModule module = emitCuda(programs, type);
    EXPECT_TRUE(std::regex_search(module.source, vectorDescriptor)) << name;
    llvm::Expected<HostCudaModule> host = HostCudaModule::compile(module);
    ASSERT_TRUE(static_cast<bool>(host))
        << name << ": " << llvm::toString(host.takeError());
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
      executeOnCpu(program, cpu, type, 1);
      host->run(i, gpu);
      host->run(i, strided, CudaGrid{2, 3});
      EXPECT_EQ(onGrid, expected) << name << " plan " << i;
      EXPECT_EQ(onSmallGrid, expected) << name << " plan " << i;
      if (HasFailure())
        return;
    }
  }
}

} // namespace

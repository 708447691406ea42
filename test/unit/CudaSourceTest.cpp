//===- CudaSourceTest.cpp - Generated kernels compile with NVRTC ----------===//
//
// The emitted CUDA source compiles with NVRTC (which needs no GPU) for every
// element type, to PTX and to a Hopper GPU's machine code (skipped where
// NVRTC is not installed), decodes work units in 64 bits only where a
// launch needs it, runs each program in one launch over all its buffers,
// and moves units of the widest vectors the alignment allows.
//
//===----------------------------------------------------------------------===//

#include "RandomMaps.h"
#include "ucp/Engine/CudaKernels.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Plan/Compose.h"

#include <gtest/gtest.h>

using namespace ucp;

TEST(CudaSource, CompilesWithNvrtcForEveryDType) {
  SentElements sent;
  TransferPlan vocab = *composeMaps(
      llvm::cantFail(buildPaddedVocabLayout("embed", 13, 8, 4)),
      llvm::cantFail(buildPaddedVocabLayout("embed", 13, 8, 2)), {}, sent);
  TransferPlan bias = *composeMaps(
      llvm::cantFail(buildScaledBiasLayout("bias", {64}, 4)),
      llvm::cantFail(buildScaledBiasLayout("bias", {64}, 2)), {}, sent);
  for (DType type : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I8,
                     DType::F8E4M3}) {
    std::vector<std::pair<std::string, CopyProgram>> programs = {
        {"embed", lowerPlan(vocab)}};
    if (isFloatingPoint(type))
      programs.push_back({"bias", lowerPlan(bias)});
    CudaModule module = llvm::cantFail(emitCuda(programs, type));
    EXPECT_FALSE(module.launches.empty());
    llvm::Expected<std::string> ptx =
        compileCudaToPtx(module.source, "compute_80");
    if (!ptx) {
      std::string error = llvm::toString(ptx.takeError());
      if (error.find("is not installed") != std::string::npos)
        GTEST_SKIP() << error;
      FAIL() << error;
    }
    EXPECT_NE(ptx->find(".entry ucp_program_0"), std::string::npos);
    // And to machine code for a Hopper GPU, as the executor loads it there.
    llvm::Expected<CompiledKernels> hopper =
        compileCudaForDevice(module.source, 9, 0);
    ASSERT_TRUE(static_cast<bool>(hopper))
        << llvm::toString(hopper.takeError());
    EXPECT_EQ(hopper->architecture, "sm_90");
  }
}

TEST(CudaSource, CompilesMachineCodeForTheGpusNvrtcKnows) {
  // With a real NVRTC (11.2 or later): machine code for a GPU it supports,
  // PTX for the newest architecture below one newer than it, and a clear
  // refusal for one older than any it supports.
  SentElements sent;
  TransferPlan plan = *composeMaps(
      llvm::cantFail(buildScaledBiasLayout("bias", {64}, 4)),
      llvm::cantFail(buildScaledBiasLayout("bias", {64}, 2)), {}, sent);
  std::string source =
      llvm::cantFail(emitCuda({{"bias", lowerPlan(plan)}}, DType::BF16)).source;
  llvm::Expected<CompiledKernels> hopper = compileCudaForDevice(source, 9, 0);
  if (!hopper) {
    std::string error = llvm::toString(hopper.takeError());
    if (error.find("is not installed") != std::string::npos)
      GTEST_SKIP() << error;
    FAIL() << error;
  }
  EXPECT_EQ(hopper->architecture, "sm_90");
  EXPECT_EQ(hopper->image.rfind("\177ELF", 0), 0u) << "not a cubin";

  llvm::Expected<CompiledKernels> future = compileCudaForDevice(source, 99, 0);
  ASSERT_TRUE(static_cast<bool>(future)) << llvm::toString(future.takeError());
  EXPECT_EQ(future->architecture.rfind("compute_", 0), 0u)
      << future->architecture;
  EXPECT_NE(future->image.find(".entry ucp_program_0"), std::string::npos);

  llvm::Expected<CompiledKernels> ancient = compileCudaForDevice(source, 1, 0);
  ASSERT_FALSE(static_cast<bool>(ancient));
  EXPECT_NE(llvm::toString(ancient.takeError())
                .find("this GPU is sm_10 (compute capability 1.0)"),
            std::string::npos);
}

TEST(CudaSource, LaunchesOf2To32UnitsOrMoreDecodeThemIn64Bits) {
  // Byte copies that cannot move vectors (the source is strided): one unit
  // per element.
  auto program = [](int64_t elements) {
    CopyProgram p;
    p.pairs.push_back({0, 0, {{{elements}, {0, {2}}, {0, {1}}, 1.0}}});
    p.sourceElements[0] = 2 * elements;
    p.targetElements[0] = elements;
    return p;
  };
  const int64_t limit = int64_t(1) << 32;
  CudaModule module =
      llvm::cantFail(emitCuda({{"largest 32-bit", program(limit - 1)},
                               {"smallest 64-bit", program(limit)}},
                              DType::U8));
  ASSERT_EQ(module.launches.size(), 2u);
  EXPECT_EQ(module.launches[0].units, limit - 1);
  EXPECT_NE(module.source.find("ucp_run<unsigned int>(ucp_program_0_table"),
            std::string::npos);
  EXPECT_NE(module.source.find("ucp_run<long long>(ucp_program_1_table"),
            std::string::npos);
  // Asked for, 64 bits everywhere.
  CudaModule wide = llvm::cantFail(
      emitCuda({{"small", program(16)}}, DType::U8, CudaUnitIndex::Wide));
  EXPECT_NE(wide.source.find("ucp_run<long long>(ucp_program_0_table"),
            std::string::npos);
}

TEST(CudaSource, OneLaunchPerProgramOverAllItsBuffers) {
  // Two buffer pairs and a fill of a third target: one kernel, whose table
  // rows name the slots of the launch's buffer table (sources 0 and 2,
  // then targets 0, 1 and 3).
  auto copy = [](int64_t sourceOffset) {
    return StridedCopy{{4}, {sourceOffset, {1}}, {0, {1}}, 1.0};
  };
  CopyProgram p;
  p.pairs.push_back({2, 0, {copy(4)}});
  p.pairs.push_back({0, 1, {copy(0)}});
  p.fills.push_back({3, {4}, {0, {1}}});
  p.sourceElements = {{0, 4}, {2, 8}};
  p.targetElements = {{0, 4}, {1, 4}, {3, 4}};
  CopyProgram empty;
  empty.targetElements = {{0, 0}};
  CudaModule module =
      llvm::cantFail(emitCuda({{"nothing", empty}, {"mixed", p}}, DType::U8));
  ASSERT_EQ(module.launches.size(), 1u);
  const CudaLaunch &launch = module.launches[0];
  EXPECT_EQ(launch.kernel, "ucp_program_1");
  EXPECT_EQ(launch.program, 1u);
  EXPECT_EQ(launch.sourceBuffers, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(launch.targetBuffers, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(launch.units, 12);
  // Rows as `{begin, rank, vector, src, dst, ...`.
  EXPECT_NE(module.source.find("{0LL, 1, 0, 1, 2, {4,"), std::string::npos);
  EXPECT_NE(module.source.find("{4LL, 1, 0, 0, 3, {4,"), std::string::npos);
  EXPECT_NE(module.source.find("{8LL, 1, 0, -1, 4, {4,"), std::string::npos);
  EXPECT_NE(module.source.find("void ucp_program_1(ucp_elem *const *buffers)"),
            std::string::npos);
}

TEST(CudaSource, UnitsAreTheWidestVectorsTheAlignmentAllows) {
  // f32 rows of 8 elements (32 bytes), 8 apart on both sides, except where
  // a case says otherwise.
  auto program = [](int64_t sourceOffset, int64_t columns, double factor) {
    CopyProgram p;
    p.pairs.push_back(
        {0, 0, {{{4, columns}, {sourceOffset, {8, 1}}, {0, {8, 1}}, factor}}});
    p.sourceElements[0] = 64;
    p.targetElements[0] = 32;
    return p;
  };
  CudaModule module =
      llvm::cantFail(emitCuda({{"aligned to 32", program(0, 8, 1.0)},
                               {"aligned to 16", program(4, 8, 1.0)},
                               {"runs of 16 bytes", program(0, 4, 1.0)},
                               {"scaled", program(0, 8, 0.5)}},
                              DType::F32));
  // Rows as `{begin, rank, vectors, src, dst, {shape}, src_offset, ...`:
  // the shape and offsets count units.
  EXPECT_NE(module.source.find("{0LL, 2, 2, 0, 1, {4, 1, 0, 0, 0, 0, 0, 0}, "
                               "0LL, {1, 1,"),
            std::string::npos);
  EXPECT_NE(module.source.find("{0LL, 2, 1, 0, 1, {4, 2, 0, 0, 0, 0, 0, 0}, "
                               "1LL, {2, 1,"),
            std::string::npos);
  EXPECT_NE(module.source.find("{0LL, 2, 1, 0, 1, {4, 1, 0, 0, 0, 0, 0, 0}, "
                               "0LL, {2, 1,"),
            std::string::npos);
  EXPECT_NE(module.source.find("{0LL, 2, 0, 0, 1, {4, 8, 0, 0, 0, 0, 0, 0}, "
                               "0LL, {8, 1,"),
            std::string::npos);
}

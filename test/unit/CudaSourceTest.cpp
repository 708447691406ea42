//===- CudaSourceTest.cpp - Generated kernels compile with NVRTC ----------===//
//
// The emitted CUDA source compiles with NVRTC (which needs no GPU) for every
// element type; skipped where NVRTC is not installed.
//
//===----------------------------------------------------------------------===//

#include "RandomMaps.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Runtime/CudaExecutor.h"

#include <gtest/gtest.h>

using namespace ucp;

TEST(CudaSource, CompilesWithNvrtcForEveryDType) {
  SentElements sent;
  TransferPlan vocab =
      *composeMaps(buildPaddedVocabLayout("embed", 13, 8, 4),
                   buildPaddedVocabLayout("embed", 13, 8, 2), {}, sent);
  TransferPlan bias =
      *composeMaps(buildScaledBiasLayout("bias", {64}, 4),
                   buildScaledBiasLayout("bias", {64}, 2), {}, sent);
  for (DType type : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I8,
                     DType::F8E4M3}) {
    std::vector<std::pair<std::string, CopyProgram>> programs = {
        {"embed", lowerPlan(vocab)}};
    if (isFloatingPoint(type))
      programs.push_back({"bias", lowerPlan(bias)});
    CudaModule module = emitCuda(programs, type);
    EXPECT_FALSE(module.launches.empty());
    llvm::Expected<std::string> ptx =
        compileCudaToPtx(module.source, "compute_80");
    if (!ptx) {
      std::string error = llvm::toString(ptx.takeError());
      if (error.find("is not installed") != std::string::npos)
        GTEST_SKIP() << error;
      FAIL() << error;
    }
    EXPECT_NE(ptx->find(".entry ucp_copy_0_"), std::string::npos);
  }
}

//===- CopyWorkloads.cpp - The layouts executors are benchmarked on -------===//

#include "CopyWorkloads.h"
#include "ucp/Layout/SplitSizes.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/CopyProgram.h"

using namespace ucp;
using namespace ucp::testing;

std::vector<CopyWorkload> ucp::testing::getCopyWorkloads() {
  std::vector<CopyWorkload> all;
  auto extract = [&](std::string name, ParamMap map) {
    all.push_back({std::move(name), {getFullTensorMap(map)}, {map}});
  };
  const int64_t rows = 16384; // 64 MiB of f32 per layout at 1024 columns.
  extract("row_split",
          *buildSplitLayout("w", {rows, 1024}, 0, getShardSizes(rows, 4)));
  // Column splits at tp4: each shard row is 64 (256 B) or 1024 (4 KiB)
  // floats.
  extract("column_256B",
          *buildSplitLayout("w", {65536, 256}, 1, getShardSizes(256, 4)));
  extract("column_4KiB",
          *buildSplitLayout("w", {4096, 4096}, 1, getShardSizes(4096, 4)));
  extract("bigcode",
          llvm::cantFail(buildBigcodeLayout("w", 8192, 4096, 1024, 4)));
  extract("codegen", *buildCodegenLayout("w", 4096, 1024, 4));
  // A 1 GiB map set (f32): 16 MLP-like weights of 64 MiB, half split by
  // rows, half by columns.
  std::vector<ParamMap> tp4, tp2;
  for (int i = 0; i < 16; ++i) {
    int64_t dim = i % 2;
    Extents shape = {4096, 4096};
    tp4.push_back(*buildSplitLayout("w" + std::to_string(i), shape, dim,
                                    getShardSizes(4096, 4)));
    tp2.push_back(*buildSplitLayout("w" + std::to_string(i), shape, dim,
                                    getShardSizes(4096, 2)));
  }
  all.push_back({"reshard_4_to_2_1GiB", tp4, tp2});
  all.push_back({"reshard_2_to_4_1GiB", tp2, tp4});
  return all;
}

//===- TransferBench.cpp - affine-run's cost per parameter ----------------===//
//
// Extracts N tiny parameters (a [4, 2] row split over 2 ranks each) from a
// full-tensor file into shard files as affine-run does (the reshard
// pipeline, then runTransfer), for N from 1,000 to 64,000, and prints the
// time per parameter. Large mixture-of-experts checkpoints hold tens of
// thousands of tensors; a time per parameter that stays flat as N grows is
// linear scaling, and the last line prints the ratio against N = 1,000 measured
// in the same run.
//
//===----------------------------------------------------------------------===//

#include "BenchTiming.h"
#include "ucp/Formats/Safetensors/Safetensors.h"
#include "ucp/Jobs/Transfer.h"
#include "ucp/Layout/SplitSizes.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Plan/Planner.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdio>

using namespace ucp;
using ucp::bench::timeBest;
namespace fs = llvm::sys::fs;

int main() {
  llvm::SmallString<128> dir;
  if (fs::createUniqueDirectory("ucp-transfer-bench", dir)) {
    std::fprintf(stderr, "ucp-transfer-bench: cannot create a folder\n");
    return 1;
  }
  auto path = [&](const std::string &name) {
    llvm::SmallString<128> full(dir);
    llvm::sys::path::append(full, name);
    return full.str().str();
  };
  TransferOptions options;
  options.threads = 1;
  options.syncOutputs = false; // What is timed is the run, not the disk.
  double firstPerParameter = 0, lastPerParameter = 0;
  for (int64_t count : {1000, 4000, 16000, 64000}) {
    std::vector<ParamMap> maps;
    std::vector<TensorInfo> tensors;
    for (int64_t i = 0; i < count; ++i) {
      maps.push_back(*buildSplitLayout("layers." + std::to_string(i) + ".w",
                                       {4, 2}, 0, getShardSizes(4, 2)));
      tensors.push_back({maps.back().name, DType::F32, {4, 2}});
    }
    std::string full = path("full-" + std::to_string(count));
    auto writer = SafetensorsWriter::create(full, tensors);
    if (!writer || (*writer)->commit()) {
      std::fprintf(stderr, "ucp-transfer-bench: cannot write %s\n",
                   full.c_str());
      return 1;
    }
    TransferSide source = getFullTensorSide(maps, full);
    std::string out = path("shards-" + std::to_string(count));
    bool failed = false;
    double seconds = timeBest(3, [&] {
      // What affine-run does: plan through the reshard pipeline, then run.
      TransferSide target = getShardSide(maps, out);
      llvm::Expected<TransferPrograms> programs =
          planTransfers(source.maps, target.maps);
      llvm::Expected<TransferStats> stats =
          programs ? runTransfer(source, target, *programs, options)
                   : llvm::Expected<TransferStats>(programs.takeError());
      if (!stats) {
        std::fprintf(stderr, "ucp-transfer-bench: %s\n",
                     llvm::toString(stats.takeError()).c_str());
        failed = true;
      }
    });
    if (failed)
      return 1;
    double perParameter = seconds / count;
    if (!firstPerParameter)
      firstPerParameter = perParameter;
    lastPerParameter = perParameter;
    std::printf("extract, %6lld parameters: %8.3f s, %6.2f us per parameter\n",
                (long long)count, seconds, perParameter * 1e6);
  }
  std::printf("time per parameter at 64,000 parameters / at 1,000: %.2f "
              "(1.0 is linear scaling)\n",
              lastPerParameter / firstPerParameter);
  fs::remove_directories(dir);
  return 0;
}

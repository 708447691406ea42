//===- DeriveBench.cpp - Index-map derivation and canonicalization speed --===//
//
// Prints, for index maps of millions of elements, the time to derive the
// canonical map (per million index entries), next to the time to merely
// walk the same index arrays once (the floor any derivation pays); and the
// time to canonicalize a Llama-3-70B-shaped map set at TP=8.
//
//===----------------------------------------------------------------------===//

#include "BenchTiming.h"
#include "RandomMaps.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Canonical/IndexMapDerivation.h"
#include "ucp/Layout/TensorParallelLayouts.h"

#include <chrono>
#include <cstdio>

using namespace ucp;
using namespace ucp::testing;
using ucp::bench::timeBest;

int main() {
  struct Case {
    const char *name;
    ParamMap map;
  };
  std::vector<Case> cases;
  cases.push_back({"row split [4096, 1024] tp8",
                   makeSplitMap("w", {4096, 1024}, 0, splitEvenly(4096, 8))});
  cases.push_back({"column split [1024, 4096] tp8",
                   makeSplitMap("w", {1024, 4096}, 1, splitEvenly(4096, 8))});
  cases.push_back({"bigcode [6144, 512] tp4", llvm::cantFail(buildBigcodeLayout(
                                                  "w", 4096, 2048, 512, 4))});
  cases.push_back({"codegen [3072, 1024] tp4",
                   std::move(*buildCodegenLayout("w", 1024, 1024, 4))});
  std::printf("%-32s %10s %12s %12s %14s\n", "index map", "entries",
              "derive ms", "walk ms", "derive ms/M");
  for (Case &c : cases) {
    IndexMap indexMap = getIndexMap(c.map);
    int64_t entries = 0;
    for (const IndexShard &shard : indexMap.shards)
      entries += shard.index.size();
    int64_t pieces = 0;
    double derive = timeBest(3, [&] {
      llvm::Expected<ParamMap> map = deriveParamMap(indexMap);
      pieces = 0;
      for (const Shard &shard : map->shards)
        pieces += shard.pieces.size();
    });
    // The sink keeps the compiler from dropping the walk.
    volatile int64_t sink = 0;
    double walk = timeBest(3, [&] {
      int64_t sum = 0;
      for (const IndexShard &shard : indexMap.shards)
        for (int64_t offset : shard.index)
          sum += offset;
      sink = sum;
    });
    (void)sink;
    std::printf("%-32s %10lld %12.2f %12.2f %14.2f   (%lld pieces)\n", c.name,
                (long long)entries, derive * 1e3, walk * 1e3,
                derive * 1e3 / (entries / 1e6), (long long)pieces);
  }

  std::vector<ParamMap> maps =
      makeLlamaMapSet(80, 8192, 28672, 1024, 128256, 8);
  double canonicalize = timeBest(3, [&] {
    for (const ParamMap &map : maps)
      (void)canonicalizeParamMap(map);
  });
  std::printf("\ncanonicalize the Llama-3-70B map set at TP=8 (%zu "
              "parameters): %.2f ms\n",
              maps.size(), canonicalize * 1e3);
  return 0;
}

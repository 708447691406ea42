//===- VerifyBench.cpp - Analytic verification vs the element walk --------===//
//
// Prints, side by side and from the same run:
//  * the analytic verification time of a Llama-3-70B-shaped map set at TP=8
//    (723 parameters) and of each of its largest parameters;
//  * the spec's reference method (visit every element of F and of every
//    shard) on one of those parameters, in C++ -- a lower bound for the
//    reference's Python;
//  * the same piece structure at 8 x 28 and at 8192 x 28672 elements;
//  * one parameter of 10k to 1.28M one-element pieces scattered over 8
//    ranks (the worst case of an index map), each size against the one
//    half its size: an O(n log n) verifier stays near 2x per doubling.
//
//   ucp-verify-bench [--skip-walk]
//
//===----------------------------------------------------------------------===//

#include "BenchTiming.h"
#include "RandomMaps.h"
#include "WalkingVerifier.h"
#include "ucp/Analysis/MapVerifier.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace ucp;
using namespace ucp::testing;
using ucp::bench::timeBest;

int main(int argc, char **argv) {
  bool skipWalk = argc > 1 && std::strcmp(argv[1], "--skip-walk") == 0;

  // Llama-3-70B: 80 layers, hidden 8192, MLP 28672, 8 kv heads of 128,
  // vocabulary 128256; TP=8.
  std::vector<ParamMap> maps =
      makeLlamaMapSet(80, 8192, 28672, 1024, 128256, 8);
  int64_t pieces = 0, elements = 0, violations = 0;
  for (const ParamMap &map : maps)
    for (const Shard &shard : map.shards)
      pieces += shard.pieces.size();
  double setSeconds = timeBest(5, [&] {
    elements = violations = 0;
    for (const ParamMap &map : maps) {
      VerifyReport report = verifyParamMap(map);
      elements += report.elements;
      violations += report.violations.size();
    }
  });
  std::printf("Llama-3-70B map set, TP=8: %zu parameters, %lld pieces, %.1f G "
              "elements, %lld violations\n",
              maps.size(), (long long)pieces, elements / 1e9,
              (long long)violations);
  std::printf("  analytic verify, whole set:          %10.3f ms\n",
              setSeconds * 1e3);

  const ParamMap *down = nullptr;
  for (const ParamMap &map : maps)
    if (map.name == "model.layers.0.mlp.down_proj.weight")
      down = &map;
  double oneAnalytic = timeBest(20, [&] { (void)verifyParamMap(*down); });
  std::printf("  analytic verify, %s [8192, 28672]: %10.3f us\n",
              down->name.c_str(), oneAnalytic * 1e6);
  if (!skipWalk) {
    VerifyReport walked;
    double oneWalk =
        timeBest(1, [&] { walked = verifyParamMapByWalking(*down); });
    std::printf("  element walk (reference), same parameter:  %10.3f s "
                "(%s; %.0fx the analytic time)\n",
                oneWalk, walked.ok() ? "clean" : "VIOLATIONS",
                oneWalk / oneAnalytic);
  }

  std::printf("\nSame piece structure, 1048576x the elements:\n");
  struct Case {
    const char *name;
    ParamMap small, large;
  } cases[] = {
      {"row split tp8", makeSplitMap("w", {8, 28}, 0, splitEvenly(8, 8)),
       makeSplitMap("w", {8192, 28672}, 0, splitEvenly(8192, 8))},
      {"column split tp8", makeSplitMap("w", {8, 28}, 1, splitEvenly(28, 8)),
       makeSplitMap("w", {8192, 28672}, 1, splitEvenly(28672, 8))},
      {"bigcode tp4", makeBigcodeMap("w", 8, 4, 28, 4),
       makeBigcodeMap("w", 8192, 4096, 28672, 4)},
  };
  for (const Case &c : cases) {
    double small = timeBest(50, [&] { (void)verifyParamMap(c.small); });
    double large = timeBest(50, [&] { (void)verifyParamMap(c.large); });
    std::printf("  %-18s %8.2f us vs %8.2f us (ratio %.2f)\n", c.name,
                small * 1e6, large * 1e6, large / small);
  }

  // Each shape of F: one-element pieces of a 1-D F are the worst case of
  // the old sweep (every cut against every box); a 2-D F spreads them over
  // rows.
  int64_t maxPieces = std::getenv("UCP_BENCH_MAX_PIECES")
                          ? std::atoll(std::getenv("UCP_BENCH_MAX_PIECES"))
                          : 1280000;
  for (int64_t columns : {int64_t(0), int64_t(100)}) {
    std::printf("\nOne-element pieces scattered over 8 ranks, F of %s:\n",
                columns ? "[n / 100, 100]" : "[n]");
    std::printf("  %9s %12s %12s %10s\n", "pieces", "verify ms", "per piece",
                "x previous");
    double previous = 0;
    for (int64_t pieces = 10000; pieces <= maxPieces; pieces *= 2) {
      std::mt19937_64 rng(pieces);
      Extents shape =
          columns ? Extents{pieces / columns, columns} : Extents{pieces};
      ParamMap map = makeScatteredMap("w", shape, 8, rng);
      VerifyReport report;
      double seconds = timeBest(3, [&] { report = verifyParamMap(map); });
      std::printf("  %9lld %12.1f %10.2f us", (long long)pieces, seconds * 1e3,
                  seconds / pieces * 1e6);
      if (previous > 0)
        std::printf(" %10.2f", seconds / previous);
      else
        std::printf(" %10s", "-");
      std::printf("%s\n", report.ok() ? "" : "  VIOLATIONS");
      previous = seconds;
    }
  }
  return 0;
}

//===- VerifyScalingTest.cpp - Verification cost vs tensor size -----------===//
//
// The same piece structure on a tensor 1000x (and more) larger must cost the
// same: the sweeps visit the same number of cells. Wall times are printed for
// the record, never asserted.
//
//===----------------------------------------------------------------------===//

#include "RandomMaps.h"
#include "ucp/Analysis/MapVerifier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

using namespace ucp;
using namespace ucp::testing;

namespace {

double secondsToVerify(const ParamMap &map, VerifyReport &report) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i)
    report = verifyParamMap(map);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
             .count() /
         10;
}

struct Layout {
  const char *name;
  std::function<ParamMap(int64_t rows, int64_t cols)> make;
};

TEST(VerifyScaling, CellsDoNotGrowWithElements) {
  std::vector<Layout> layouts = {
      {"row split tp8",
       [](int64_t r, int64_t c) {
         return makeSplitMap("w", {r, c}, 0, splitEvenly(r, 8));
       }},
      {"column split tp8",
       [](int64_t r, int64_t c) {
         return makeSplitMap("w", {r, c}, 1, splitEvenly(c, 8));
       }},
      {"bigcode tp4",
       [](int64_t r, int64_t c) {
         return makeBigcodeMap("w", r, r / 2, c, 4);
       }},
      {"replicated tp8",
       [](int64_t r, int64_t c) {
         return makeReplicatedMap("w", {r, c}, 8);
       }},
  };
  for (const Layout &layout : layouts) {
    VerifyReport small, large;
    double tSmall = secondsToVerify(layout.make(8, 28), small);
    double tLarge = secondsToVerify(layout.make(8192, 28672), large);
    ASSERT_TRUE(small.ok());
    ASSERT_TRUE(large.ok());
    EXPECT_EQ(small.cells, large.cells) << layout.name;
    std::printf("%-18s [8, 28]: %5lld cells %8.2f us   [8192, 28672]: %5lld "
                "cells %8.2f us (%lldx the elements)\n",
                layout.name, (long long)small.cells, tSmall * 1e6,
                (long long)large.cells, tLarge * 1e6,
                (long long)(large.elements / small.elements));
  }
}

} // namespace

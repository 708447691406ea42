//===- ComposeBench.cpp - Planning time and plan sizes --------------------===//
//
// Prints the time to plan a Llama-3-70B-shaped map set from TP=8 to TP=4
// (723 parameters) and the total number of copies, next to the time to
// verify the same two map sets (the cheapest whole-map pass) as a baseline
// of the same run; then the plan sizes of the spec's reference layouts.
//
//===----------------------------------------------------------------------===//

#include "BenchTiming.h"
#include "RandomMaps.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Plan/Compose.h"

#include <chrono>
#include <cstdio>

using namespace ucp;
using namespace ucp::testing;
using ucp::bench::timeBest;

namespace {

size_t countCopies(const ParamMap &source, const ParamMap &target,
                   ReplicaPolicy policy = {}) {
  SentElements sent;
  llvm::Expected<TransferPlan> plan = composeMaps(source, target, policy, sent);
  if (!plan) {
    std::fprintf(stderr, "%s\n", llvm::toString(plan.takeError()).c_str());
    return 0;
  }
  return plan->segments.size();
}

} // namespace

int main() {
  std::vector<ParamMap> tp8 = makeLlamaMapSet(80, 8192, 28672, 1024, 128256, 8);
  std::vector<ParamMap> tp4 = makeLlamaMapSet(80, 8192, 28672, 1024, 128256, 4);
  size_t copies = 0, fills = 0;
  double plan = timeBest(3, [&] {
    copies = fills = 0;
    SentElements sent;
    for (size_t i = 0; i < tp8.size(); ++i) {
      llvm::Expected<TransferPlan> p = composeMaps(tp8[i], tp4[i], {}, sent);
      copies += p->segments.size();
      fills += p->fills.size();
    }
  });
  double verify = timeBest(3, [&] {
    for (size_t i = 0; i < tp8.size(); ++i) {
      (void)verifyParamMap(tp8[i]);
      (void)verifyParamMap(tp4[i]);
    }
  });
  std::printf("Llama-3-70B map set, TP=8 -> TP=4, %zu parameters:\n",
              tp8.size());
  std::printf("  plan: %.2f ms, %zu copies, %zu fills\n", plan * 1e3, copies,
              fills);
  std::printf("  verify both map sets (baseline): %.2f ms (plan / verify = "
              "%.2f)\n\n",
              verify * 1e3, plan / verify);

  std::printf("copies per plan (spec ceilings in brackets):\n");
  for (int64_t hidden : {32, 64, 128, 256})
    std::printf("  codegen 4 -> 8, hidden %3lld: %zu (40)\n", (long long)hidden,
                countCopies(*buildCodegenLayout("qkv", hidden, 8, 4),
                            *buildCodegenLayout("qkv", hidden, 8, 8)));
  std::printf("  bigcode 2 -> 4 (lowest holder): %zu (7)\n",
              countCopies(llvm::cantFail(buildBigcodeLayout("c", 32, 16, 8, 2)),
                          llvm::cantFail(buildBigcodeLayout("c", 32, 16, 8, 4)),
                          {ReplicaPolicy::Lowest}));
  for (int64_t rows : {8, 128})
    std::printf("  Yuan o_proj 4 -> 2, %lld rows: %zu (4)\n", (long long)rows,
                countCopies(*buildYuanLayout("o", {rows, 32}, 1, 4, 8),
                            *buildYuanLayout("o", {rows, 32}, 1, 2, 8)));
  size_t worst = 0;
  for (int64_t vocab : {13, 32, 100, 50257})
    for (int64_t from : {1, 2, 4, 8})
      for (int64_t to : {1, 2, 4, 8}) {
        size_t n = countCopies(
            llvm::cantFail(buildPaddedVocabLayout("e", vocab, 8, from)),
            llvm::cantFail(buildPaddedVocabLayout("e", vocab, 8, to)));
        worst = std::max<size_t>(worst, n * 100 / (from + to));
      }
  std::printf("  vocabulary, TP in {1,2,4,8}, V in {13,32,100,50257}: at most "
              "%zu%% of src_tp + tgt_tp (100%%)\n",
              worst);
  return 0;
}

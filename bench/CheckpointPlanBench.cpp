//===- CheckpointPlanBench.cpp - Planning a checkpoint of many tensors ----===//
//
// Prints the time to plan a checkpoint of 20,000 small parameters (a
// DeepSpeed-like model of [8, 8] and [8] tensors, each a ZeRO-2 fragment
// over DP 2 planned into its fragments over DP 3 and into its full tensor,
// what ds-retarget and ds-to-universal plan) two ways, in the same run:
//
//  * the planner (ucp/Plan/Planner.h), once per parameter: a program
//    serves every optimizer state;
//  * the maps through an MLIR module and the pass pipeline once per
//    optimizer state (verify, compose, lower at the state's scale power),
//    which is how the jobs planned before the planner was plain C++.
//
//===----------------------------------------------------------------------===//

#include "BenchTiming.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/Layout/NestedLayout.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Planner.h"

#include "mlir/Pass/PassManager.h"

#include <cstdio>

using namespace ucp;
using ucp::bench::timeBest;

/// Each parameter's fragments: `elements` cut in `dp` nearly equal ranges.
static std::vector<ParamMap> makeFragments(int64_t count, int64_t dp) {
  std::vector<ParamMap> maps;
  for (int64_t i = 0; i < count; ++i) {
    Extents shape = i % 9 < 7 ? Extents{8, 8} : Extents{8};
    int64_t elements = *getNumElements(shape);
    Extents sizes;
    for (int64_t r = 0; r < dp; ++r)
      sizes.push_back(elements * (r + 1) / dp - elements * r / dp);
    maps.push_back(llvm::cantFail(
        buildFlatRangeLayout("p" + std::to_string(i), shape, sizes)));
  }
  return maps;
}

/// Plans `sources` into `targets` as the jobs did before: through a module
/// and the pass pipeline, once per optimizer state.
static size_t planThroughModules(llvm::ArrayRef<ParamMap> sources,
                                 llvm::ArrayRef<ParamMap> targets) {
  size_t programs = 0;
  for (int scalePower : {1, -1, -2}) {
    mlir::MLIRContext context;
    context.loadDialect<UCPDialect>();
    context.disableMultithreading();
    mlir::Location loc = mlir::UnknownLoc::get(&context);
    mlir::OwningOpRef<mlir::ModuleOp> from = buildMapModule(sources, loc);
    mlir::OwningOpRef<mlir::ModuleOp> to = buildMapModule(targets, loc);
    mlir::PassManager pm(&context);
    pm.addPass(createUCPVerifyPass());
    pm.addPass(createUCPComposePass(*to, {}));
    pm.addPass(createUCPLowerCopiesPass({scalePower}));
    if (mlir::failed(pm.run(*from)))
      std::abort();
    from->walk([&](PlanOp plan) {
      CopyProgram program = lowerPlan(toTransferPlan(plan));
      programs += !program.pairs.empty();
    });
  }
  return programs;
}

int main() {
  constexpr int64_t kParams = 20000;
  std::vector<ParamMap> dp2 = makeFragments(kParams, 2);
  std::vector<ParamMap> dp3 = makeFragments(kParams, 3);
  std::vector<ParamMap> full;
  for (const ParamMap &map : dp2)
    full.push_back(getFullTensorMap(map));
  std::printf("Planning %lld parameters of [8, 8] and [8], ZeRO-2 DP 2 (s):\n"
              "  %-28s %14s %22s %8s\n",
              static_cast<long long>(kParams), "into", "planner, once",
              "module pipeline x 3", "ratio");
  for (auto [name, targets] : {std::pair{"DP 3 (ds-retarget)", &dp3},
                               {"full (ds-to-universal)", &full}}) {
    double planner = timeBest(3, [&] {
      if (llvm::cantFail(planTransfers(dp2, *targets)).size() != kParams)
        std::abort();
    });
    double modules = timeBest(3, [&] { planThroughModules(dp2, *targets); });
    std::printf("  %-28s %14.3f %22.3f %7.1fx\n", name, planner, modules,
                modules / planner);
  }
  return 0;
}

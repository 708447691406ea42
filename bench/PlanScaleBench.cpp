//===- PlanScaleBench.cpp - Plans over thousands of ranks -----------------===//
//
// Prints, for a row split over W ranks resharded to W / 2 (W = 256 ... 4096),
// the time to compose the plan, build its ucp.plan op, verify it, print it
// and parse it back, each with its ratio to the size half as large: a cost
// linear in the ranks (up to a log) stays near 2x per doubling.
//
//===----------------------------------------------------------------------===//

#include "BenchTiming.h"
#include "RandomMaps.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Plan/Compose.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using namespace ucp;
using namespace ucp::testing;
using ucp::bench::timeBest;

int main() {
  mlir::MLIRContext context;
  context.loadDialect<UCPDialect>();
  context.disableMultithreading();
  const char *steps[] = {"compose", "build op", "verify", "print", "parse"};
  std::printf("Row split of [W, 64] over W ranks -> W / 2 ranks (ms, and x "
              "the size half as large):\n  %6s",
              "W");
  for (const char *step : steps)
    std::printf(" %16s", step);
  std::printf("\n");
  double previous[5] = {0, 0, 0, 0, 0};
  for (int64_t world = 256; world <= 4096; world *= 2) {
    ParamMap source =
        makeSplitMap("w", {world, 64}, 0, splitEvenly(world, world));
    ParamMap target =
        makeSplitMap("w", {world, 64}, 0, splitEvenly(world, world / 2));
    TransferPlan plan;
    double seconds[5];
    seconds[0] = timeBest(3, [&] {
      SentElements sent;
      plan = *composeMaps(source, target, {}, sent);
    });
    mlir::OwningOpRef<mlir::ModuleOp> module;
    seconds[1] = timeBest(3, [&] {
      module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
      mlir::OpBuilder builder(module->getBody(), module->getBody()->end());
      buildPlanOp(builder, module->getLoc(), plan);
    });
    bool valid = false;
    seconds[2] =
        timeBest(3, [&] { valid = mlir::succeeded(mlir::verify(*module)); });
    std::string text;
    seconds[3] = timeBest(3, [&] {
      text.clear();
      llvm::raw_string_ostream os(text);
      module->print(os);
    });
    bool parsed = false;
    seconds[4] = timeBest(3, [&] {
      parsed = static_cast<bool>(
          mlir::parseSourceString<mlir::ModuleOp>(text, &context));
    });
    std::printf("  %6lld", (long long)world);
    for (int i = 0; i < 5; ++i) {
      if (previous[i] > 0)
        std::printf(" %9.2f (%4.2fx)", seconds[i] * 1e3,
                    seconds[i] / previous[i]);
      else
        std::printf(" %9.2f        ", seconds[i] * 1e3);
      previous[i] = seconds[i];
    }
    std::printf("%s\n", valid && parsed ? "" : "  FAILED");
  }
  return 0;
}

//===- PlanDocumentFuzzer.cpp - Fuzzes the plan document reader -----------===//
//
// A plan the reader accepts lowers to a copy program, and written back, the
// document reads as the same plans.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "ucp/Formats/Json/PlanDocument.h"
#include "ucp/Plan/CopyProgram.h"

#include "llvm/Support/raw_ostream.h"

using namespace ucp;
using namespace ucp::fuzz;

/// Whether two plans say the same: the reader fills every field.
static bool samePlan(const TransferPlan &a, const TransferPlan &b) {
  return a.name == b.name && a.sourceWorld == b.sourceWorld &&
         a.targetWorld == b.targetWorld && a.sourceShards == b.sourceShards &&
         a.targetShards == b.targetShards && a.segments == b.segments &&
         a.fills == b.fills;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<std::vector<TransferPlan>> plans =
      parsePlanDocument(asText(data, size));
  if (!plans) {
    ignore(plans.takeError());
    return 0;
  }
  for (const TransferPlan &plan : *plans)
    (void)lowerPlan(plan);
  std::string text;
  llvm::raw_string_ostream os(text);
  writePlanDocument(*plans, os);
  llvm::Expected<std::vector<TransferPlan>> again = parsePlanDocument(text);
  fuzzCheck(static_cast<bool>(again), "a written plan document reads back");
  fuzzCheck(again->size() == plans->size(), "as many plans read back");
  for (auto [a, b] : llvm::zip_equal(*again, *plans))
    fuzzCheck(samePlan(a, b), "a written plan reads as the same plan");
  return 0;
}

//===- ExpertPlacementFuzzer.cpp - Fuzzes the AutoEP descriptor reader ----===//
//
// A placement the reader accepts builds the map of experts of shape [2];
// a map it builds is valid.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Formats/Json/ExpertPlacementDocument.h"
#include "ucp/Layout/ExpertPlacement.h"

using namespace ucp;
using namespace ucp::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<ExpertPlacement> placement =
      parseExpertPlacement(asText(data, size));
  if (!placement) {
    ignore(placement.takeError());
    return 0;
  }
  llvm::Expected<ParamMap> map = buildExpertLayout("experts", *placement, {2});
  if (!map) {
    ignore(map.takeError());
    return 0;
  }
  llvm::Error error = checkParamMap(*map);
  fuzzCheck(!error, "an expert layout is a valid map");
  return 0;
}

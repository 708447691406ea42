//===- LegacyFuzzer.cpp - Fuzzes the legacy-metadata reader and lowering --===//
//
// Every parameter of accepted metadata is lowered; a lowered map is a
// valid map (the lowering builds layouts, which verify by construction).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Formats/Json/LegacyDocument.h"

using namespace ucp;
using namespace ucp::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<LegacyDocument> document =
      parseLegacyDocument(asText(data, size));
  if (!document) {
    ignore(document.takeError());
    return 0;
  }
  for (const LegacyParam &param : document->params) {
    llvm::Expected<ParamMap> map =
        lowerLegacyParam(param, document->categories, document->tp);
    if (!map) {
      ignore(map.takeError());
      continue;
    }
    llvm::Error error = checkParamMap(*map);
    fuzzCheck(!error, "a lowered legacy parameter is a valid map");
  }
  return 0;
}

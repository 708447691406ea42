//===- MapDocumentFuzzer.cpp - Fuzzes the JSON map document reader --------===//
//
// A document the reader accepts holds maps that satisfy the local
// invariants; verifying and canonicalizing them must not crash; and what
// the writer makes of them is a fixpoint: read and written again, the same
// text.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Formats/Json/MapDocument.h"

#include "llvm/Support/raw_ostream.h"

using namespace ucp;
using namespace ucp::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<std::vector<ParamMap>> maps =
      parseMapDocument(asText(data, size));
  if (!maps) {
    ignore(maps.takeError());
    return 0;
  }
  for (const ParamMap &map : *maps) {
    VerifyReport report = verifyParamMap(map);
    for (const Violation &violation : report.violations)
      (void)describeViolation(map, violation);
    llvm::Expected<ParamMap> canonical = canonicalizeParamMap(map);
    if (!canonical)
      ignore(canonical.takeError());
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  writeMapDocument(*maps, os);
  llvm::Expected<std::vector<ParamMap>> again = parseMapDocument(text);
  fuzzCheck(static_cast<bool>(again), "a written document reads back");
  std::string twice;
  llvm::raw_string_ostream os2(twice);
  writeMapDocument(*again, os2);
  fuzzCheck(twice == text, "the written document is a fixpoint");
  return 0;
}

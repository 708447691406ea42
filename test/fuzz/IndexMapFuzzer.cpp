//===- IndexMapFuzzer.cpp - Fuzzes the index-map reader and derivation ----===//
//
// Every index map the reader accepts is derived; a map derived without
// error covers what the index says: its own index map lists the same F
// offset for every shard element.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Canonical/IndexMapDerivation.h"
#include "ucp/Formats/Json/IndexMapDocument.h"

using namespace ucp;
using namespace ucp::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<std::vector<IndexMap>> indexMaps =
      parseIndexMapDocument(asText(data, size));
  if (!indexMaps) {
    ignore(indexMaps.takeError());
    return 0;
  }
  for (const IndexMap &indexMap : *indexMaps) {
    llvm::Expected<ParamMap> map = deriveParamMap(indexMap);
    if (!map) {
      ignore(map.takeError());
      continue;
    }
    // The element walk of getIndexMap is bounded by the index itself.
    IndexMap back = getIndexMap(*map);
    fuzzCheck(back.shards.size() == indexMap.shards.size(),
              "the derived map has the index map's shards");
    for (auto [derived, given] : llvm::zip_equal(back.shards, indexMap.shards))
      fuzzCheck(derived.index == given.index,
                "the derived map places every shard element where the index "
                "says");
    if (llvm::Error error = checkParamMap(*map))
      ignore(std::move(error));
  }
  return 0;
}

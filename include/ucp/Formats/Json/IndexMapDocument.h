//===- IndexMapDocument.h - The JSON index-map document ---------*- C++ -*-===//
//
// Reads per-rank index maps, the raw material of the spec's §5 method:
//
//   {"params": {"name": {"logical_shape": [...], "ranks": {
//     "0": {"shard_shape": [...], "index": [flat F offset of every shard
//                                           element, row-major]}}}}}
//
// Parameter keys are plain names. The world size is one more than the
// largest rank key.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_JSON_INDEXMAPDOCUMENT_H
#define UCP_FORMATS_JSON_INDEXMAPDOCUMENT_H

#include "ucp/Canonical/IndexMapDerivation.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// Parses an index-map document; errors carry the JSON path. Index maps
/// come back sorted by name.
llvm::Expected<std::vector<IndexMap>>
parseIndexMapDocument(llvm::StringRef text);

} // namespace ucp

#endif // UCP_FORMATS_JSON_INDEXMAPDOCUMENT_H

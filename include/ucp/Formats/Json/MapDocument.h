//===- MapDocument.h - The JSON map document of spec §6.2 -------*- C++ -*-===//
//
// Reads and writes the `affine_map` document:
//
//   {"version": 1, "params": {"^escaped\.name$": {
//     "logical_shape": [...],
//     "ranks": {"0": {"shard_shape": [...], "pieces": [
//       {"shape": [...], "source": [off, [strides]], "dest": [off, [strides]],
//        "locations": [...], "scale": s}]}}}}}
//
// Parameters are keyed by exact-match patterns or by their names (as
// DeepSpeed keys AutoEP's `affine_maps` collection, read alike). Accepted
// bare, wrapped as {"affine_map": {...}} or {"affine_maps": {...}}, or
// inside a whole UNIVERSAL_CHECKPOINT_INFO object; rank keys are strings of
// integers (JSON has no other keys); `scale` defaults to 1; a missing
// `version` means 1.
// The world size of a parameter is one more than the largest rank key or
// location it mentions; writers therefore list every rank of the world,
// empty ones with an all-zero shard shape and no pieces.
//
// One key beyond §6.2: a parameter may carry "original_vocab_size", the
// number of real rows of a vocabulary padded for an even split (spec §8.1
// option a records it; readers that do not know the key ignore it).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_JSON_MAPDOCUMENT_H
#define UCP_FORMATS_JSON_MAPDOCUMENT_H

#include "ucp/Formats/Json/JsonReading.h"
#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace ucp {

/// Parses a map document. Every structural, type and local-invariant error
/// is reported with the JSON path of the offending value, e.g.
/// `$.params["^w$"].ranks["1"].pieces[0].shape[1]: ...`. Maps come back
/// sorted by name, shards by rank, and satisfy the local invariants.
llvm::Expected<std::vector<ParamMap>> parseMapDocument(llvm::StringRef text);

/// Reads a map document already parsed, found at `path` of a larger one
/// (UNIVERSAL_CHECKPOINT_INFO's `affine_map`, say), as parseMapDocument.
llvm::Expected<std::vector<ParamMap>>
readMapDocument(const llvm::json::Value &root, const JsonPath &path);

/// Writes the document for `maps` to `os`: bare, parameters sorted by key,
/// string rank keys in ascending rank order with every rank of the world
/// listed, one piece per line, `scale` only when it is not 1.
void writeMapDocument(llvm::ArrayRef<ParamMap> maps, llvm::raw_ostream &os);

/// Returns the exact-match pattern of a parameter name, `^` + the name
/// escaped as Python's `re.escape` does + `$`.
std::string getParamPattern(llvm::StringRef name);

/// Returns the parameter name a key stands for: an exact-match pattern, or
/// the name itself (as DeepSpeed keys AutoEP's `affine_maps`). Refuses a
/// key with an unescaped regex operator other than `.` (which the spec's own
/// example leaves unescaped), and a pattern without its closing `$`.
llvm::Expected<std::string> getParamName(llvm::StringRef pattern);

} // namespace ucp

#endif // UCP_FORMATS_JSON_MAPDOCUMENT_H

//===- PlanDocument.h - The JSON plan document ------------------*- C++ -*-===//
//
// Reads and writes transfer plans as the plan document, the shape of
// DeepSpeed's phase-2 planner segments:
//
//   {"version": 1, "params": {name: {"source_world": S, "target_world": T,
//     "source_shards": {"0": [...], ...}, "target_shards": {"0": [...]},
//     "segments": [{"shape": [...], "source": [rank, off, [strides]],
//                   "target": [rank, off, [strides]], "scale": s}],
//     "fill": [{"rank": t, "shape": [...], "target": [off, [strides]]}]}}}
//
// Offsets are into the shards; "scale" (s_target / s_source) appears only
// when it is not 1. The shard shapes ("source_shards", "target_shards",
// rank -> shape) go beyond the planner's segments: without them no reader
// could check that a copy stays inside its shards, or that the writes tile
// each target.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_JSON_PLANDOCUMENT_H
#define UCP_FORMATS_JSON_PLANDOCUMENT_H

#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace ucp {

/// Writes the plan document of `plans` to `os`, parameters sorted by name,
/// one segment per line.
void writePlanDocument(llvm::ArrayRef<TransferPlan> plans,
                       llvm::raw_ostream &os);

/// Parses a plan document and checks every plan as the plan ops do: shards
/// within the worlds, copies and fills inside their shards, every target
/// element written once. Errors carry the JSON path of the offending value.
llvm::Expected<std::vector<TransferPlan>>
parsePlanDocument(llvm::StringRef text);

} // namespace ucp

#endif // UCP_FORMATS_JSON_PLANDOCUMENT_H

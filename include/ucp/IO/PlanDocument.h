//===- PlanDocument.h - The JSON plan document ------------------*- C++ -*-===//
//
// Writes transfer plans as DESIGN.md §5's plan document, the shape of
// DeepSpeed's phase-2 planner segments:
//
//   {"version": 1, "params": {name: {"source_world": S, "target_world": T,
//     "segments": [{"shape": [...], "source": [rank, off, [strides]],
//                   "target": [rank, off, [strides]], "scale": s}],
//     "fill": [{"rank": t, "shape": [...], "target": [off, [strides]]}]}}}
//
// Offsets are into the shards; "scale" (s_target / s_source) appears only
// when it is not 1.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_IO_PLANDOCUMENT_H
#define UCP_IO_PLANDOCUMENT_H

#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/raw_ostream.h"

namespace ucp {

/// Writes the plan document of `plans` to `os`, parameters sorted by name,
/// one segment per line.
void writePlanDocument(llvm::ArrayRef<TransferPlan> plans,
                       llvm::raw_ostream &os);

} // namespace ucp

#endif // UCP_IO_PLANDOCUMENT_H

//===- BlockLayout.h - Layouts narrowing F along one dimension --*- C++ -*-===//
//
// Every tensor-parallel layout DeepSpeed produces narrows F along one
// dimension: rank r's shard is F restricted to some runs of indices along
// that dimension, concatenated in order. This is the one place such a
// description becomes a map: runs are cut wherever the set of ranks holding
// them changes (so `locations` are exact), and the result is canonicalized.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LAYOUT_BLOCKLAYOUT_H
#define UCP_LAYOUT_BLOCKLAYOUT_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// `count` consecutive indices of F along the split dimension from `start`.
struct IndexRun {
  int64_t start = 0;
  int64_t count = 0;
};

/// Returns the canonical map of the layout whose rank r holds F narrowed
/// along `dim` to `runsByRank[r]`, concatenated in order, scaled by `scale`.
/// Ranks listing the same indices share them (their locations say so). The
/// runs must lie inside F. Refuses, before allocating them, locations that
/// would exceed kMaxMapLocations (indices shared by thousands of ranks).
llvm::Expected<ParamMap>
buildBlockLayout(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                 int64_t dim, llvm::ArrayRef<std::vector<IndexRun>> runsByRank,
                 double scale = 1.0);

/// Returns the runs of consecutive splits: rank r holds `sizes[r]` indices
/// after those of the ranks before it, starting at `start`.
std::vector<std::vector<IndexRun>>
getContiguousRuns(llvm::ArrayRef<int64_t> sizes, int64_t start = 0);

} // namespace ucp

#endif // UCP_LAYOUT_BLOCKLAYOUT_H

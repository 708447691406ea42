//===- PieceFolding.h - Maximal merging of pieces in N-D --------*- C++ -*-===//
//
// The heart of the canonical form (docs/Canonicalization.md): blocks of F,
// each mapped affinely into a shard, are merged into as few pieces as the
// layout allows.
//
// Two blocks merge along dimension d when they carry the same label
// (locations and scale), agree on every other dimension (range of F and
// stride in the shard), touch in F along d, and the second continues the
// first's progression in the shard. Blocks are grouped by everything but d
// and sorted before merging, so blocks that stack in F merge even when they
// are far apart in shard order (spec §8.2). Dimensions are folded innermost
// first, repeatedly, until nothing merges.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CANONICAL_PIECEFOLDING_H
#define UCP_CANONICAL_PIECEFOLDING_H

#include "ucp/Analysis/BoxDecomposition.h"

#include <vector>

namespace ucp {

/// A block of F, where it sits in the shard, and what it is labelled with.
struct FoldBlock {
  /// The block of F and its place in the shard (strides per F dimension).
  MappedBox mapped;
  /// Blocks merge only within a label (an index into the caller's table of
  /// (locations, scale)).
  unsigned label = 0;
};

/// Merges `blocks` maximally. The result's blocks have the same elements,
/// each in the same place in the shard.
std::vector<FoldBlock> foldBlocks(std::vector<FoldBlock> blocks);

/// Returns the canonical dest stride of every dimension: a dimension of
/// extent 1 gets the stride it would have if contiguous with the dimension
/// inside it (1 for the innermost), so that `[1, 8]` rows of an `[n, 8]`
/// shard read `[8, 1]`.
Extents getCanonicalStrides(const Box &box, llvm::ArrayRef<int64_t> strides);

} // namespace ucp

#endif // UCP_CANONICAL_PIECEFOLDING_H

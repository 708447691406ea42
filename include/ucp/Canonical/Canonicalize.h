//===- Canonicalize.h - The canonical form of parameter maps ----*- C++ -*-===//
//
// A map is canonical (docs/Canonicalization.md) when, on every shard:
//  * every piece's source is a box of F: as many dimensions as F, F's
//    row-major strides;
//  * pieces are maximally folded in N dimensions, grouped so that blocks that
//    stack in F fold even when they are apart in shard order, and never
//    across a change of locations or scale;
//  * a dimension of extent 1 has the dest stride it would have if contiguous
//    with the dimension inside it;
//  * pieces are ordered by dest offset, empty pieces are dropped;
//  * shards are in ascending rank order.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CANONICAL_CANONICALIZE_H
#define UCP_CANONICAL_CANONICALIZE_H

#include "ucp/Canonical/PieceFolding.h"

#include "llvm/Support/Error.h"

#include <map>

namespace ucp {

/// Interns the (locations, scale) labels of blocks so that folding compares
/// integers.
class LabelTable {
public:
  /// Returns the label of `locations` and `scale`.
  unsigned intern(llvm::ArrayRef<int64_t> locations, double scale);
  llvm::ArrayRef<int64_t> getLocations(unsigned label) const {
    return labels[label].first;
  }
  double getScale(unsigned label) const { return labels[label].second; }

private:
  using Label = std::pair<std::vector<int64_t>, double>;
  std::vector<Label> labels;
  std::map<Label, unsigned> ids;
};

/// Folds `blocks` of a shard of a parameter of `logicalShape` and returns
/// the canonical pieces, in shard order.
std::vector<Piece> buildCanonicalPieces(std::vector<FoldBlock> blocks,
                                        const LabelTable &labels,
                                        llvm::ArrayRef<int64_t> logicalShape);

/// Returns the box of F a canonical piece (a box source with F's strides)
/// covers.
Box getCanonicalPieceBox(const Piece &piece,
                         llvm::ArrayRef<int64_t> logicalShape);

/// Returns the boxes of F that piece `index` of `shard` (of `map`) covers,
/// each mapped to where its elements sit in the shard; fails for a source
/// view of more than kMaxBoxesPerView boxes, naming the piece.
llvm::Expected<llvm::SmallVector<MappedBox>>
decomposePieceSource(const ParamMap &map, const Shard &shard, size_t index);

/// Returns `map` in canonical form. Every element of F keeps its place in
/// every shard. Fails only for a piece too irregular to decompose.
llvm::Expected<ParamMap> canonicalizeParamMap(const ParamMap &map);

} // namespace ucp

#endif // UCP_CANONICAL_CANONICALIZE_H

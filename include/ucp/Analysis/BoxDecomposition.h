//===- BoxDecomposition.h - Strided views as unions of boxes ----*- C++ -*-===//
//
// Every analysis of a map is geometry on boxes: half-open multi-index ranges
// of a row-major buffer (F or a shard). A piece's view is an arbitrary
// `as_strided` view, so it is first decomposed into boxes of the buffer it
// indexes. The decomposition is exact:
//
//  1. dimensions of extent 1 are dropped, dimensions of stride 0 repeat the
//     same elements (dropped, or counted twice where repeats matter), the
//     rest are sorted by stride and contiguous neighbours are merged;
//  2. if every remaining dimension steps along a distinct buffer dimension
//     (its stride is that dimension's row-major stride) without running past
//     its end, the view is one box;
//  3. if only the outermost dimension runs past the end of its buffer
//     dimension, it walks a contiguous range of the flattened outer buffer
//     dimensions, which splits into at most 2k-1 boxes (head, middle, tail
//     per level), times the box of the inner dimensions;
//  4. otherwise the outermost dimension is enumerated and each slice is
//     decomposed recursively.
//
// Steps 2-3 cost O(rank) whatever the extents; only step 4 costs time
// linear in an extent, and only for a dimension whose stride is none of the
// buffer's strides (every other row, say), whose elements really are that
// many separate boxes.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ANALYSIS_BOXDECOMPOSITION_H
#define UCP_ANALYSIS_BOXDECOMPOSITION_H

#include "ucp/Map/ParamMap.h"

namespace ucp {

/// A non-empty half-open box `[lo, hi)` of multi-indices of a buffer.
struct Box {
  Extents lo;
  Extents hi;

  /// Returns the number of elements of the box.
  int64_t getNumElements() const;
  bool operator==(const Box &other) const {
    return lo == other.lo && hi == other.hi;
  }
};

/// A box of a buffer together with where its elements sit on the other side
/// of a piece: the element `lo + i` sits at `otherOffset + sum_d i_d *
/// otherStrides[d]`. Dimensions where the box has extent 1 have stride
/// `kAnyStride`: any value describes them.
struct MappedBox {
  Box box;
  int64_t otherOffset = 0;
  Extents otherStrides;
};

/// The stride of a dimension of extent 1, which no element steps along.
constexpr int64_t kAnyStride = -1;

/// How a decomposition treats a view that touches an element more than once.
enum class Repeats {
  /// Each element appears in the result once per set it belongs to; repeats
  /// along stride-0 dimensions are dropped (reading one element twice is
  /// harmless).
  Collapse,
  /// Stride-0 repeats yield the boxes twice, so that a write that lands on
  /// an element more than once shows up as overlapping boxes.
  Keep,
  /// Stride-0 dimensions are enumerated, so that every element of the view
  /// is mapped to its place on the other side.
  Enumerate,
};

/// The most boxes one view may decompose into before decomposition gives up.
constexpr int64_t kMaxBoxesPerView = int64_t(1) << 20;

/// Appends to `out` boxes of the row-major buffer `bufferShape` whose union
/// is the set of elements that the view `shape` at `view` touches. The view
/// must lie inside the buffer. Returns false, leaving `out` unspecified, if
/// the view needs more than `kMaxBoxesPerView` boxes.
bool decomposeView(llvm::ArrayRef<int64_t> shape, const StridedView &view,
                   llvm::ArrayRef<int64_t> bufferShape, Repeats repeats,
                   llvm::SmallVectorImpl<Box> &out);

/// Like `decomposeView`, and also maps each box to `other`, the view of the
/// same `shape` on the piece's other side.
bool decomposeMappedView(llvm::ArrayRef<int64_t> shape, const StridedView &view,
                         const StridedView &other,
                         llvm::ArrayRef<int64_t> bufferShape, Repeats repeats,
                         llvm::SmallVectorImpl<MappedBox> &out);

} // namespace ucp

#endif // UCP_ANALYSIS_BOXDECOMPOSITION_H

//===- PieceFolding.cpp - Maximal merging of pieces in N dimensions -------===//

#include "ucp/Canonical/PieceFolding.h"

#include <algorithm>

using namespace ucp;
using llvm::ArrayRef;

namespace {

/// Orders blocks by everything that must agree for a merge along `dim`,
/// then by their start along `dim`.
struct AlongDim {
  size_t dim;

  /// The stride of `dim` of `b` as far as merging cares: unset for extent 1.
  static int64_t strideKey(const FoldBlock &b, size_t d) {
    return b.mapped.box.hi[d] - b.mapped.box.lo[d] > 1
               ? b.mapped.otherStrides[d]
               : kAnyStride;
  }

  /// Compares the grouping key: label, then every other dimension.
  int compareGroup(const FoldBlock &a, const FoldBlock &b) const {
    if (a.label != b.label)
      return a.label < b.label ? -1 : 1;
    for (size_t d = 0; d < a.mapped.box.lo.size(); ++d) {
      if (d == dim)
        continue;
      const Box &x = a.mapped.box, &y = b.mapped.box;
      if (x.lo[d] != y.lo[d])
        return x.lo[d] < y.lo[d] ? -1 : 1;
      if (x.hi[d] != y.hi[d])
        return x.hi[d] < y.hi[d] ? -1 : 1;
      int64_t sa = strideKey(a, d), sb = strideKey(b, d);
      if (sa != sb)
        return sa < sb ? -1 : 1;
    }
    return 0;
  }

  bool operator()(const FoldBlock &a, const FoldBlock &b) const {
    if (int c = compareGroup(a, b))
      return c < 0;
    if (a.mapped.box.lo[dim] != b.mapped.box.lo[dim])
      return a.mapped.box.lo[dim] < b.mapped.box.lo[dim];
    return a.mapped.otherOffset < b.mapped.otherOffset;
  }

  /// Merges `next` into `block` if it continues it along `dim`.
  bool tryMerge(FoldBlock &block, const FoldBlock &next) const {
    Box &box = block.mapped.box;
    const Box &nextBox = next.mapped.box;
    if (compareGroup(block, next) != 0 || nextBox.lo[dim] != box.hi[dim])
      return false;
    int64_t extent = box.hi[dim] - box.lo[dim];
    int64_t delta = next.mapped.otherOffset - block.mapped.otherOffset;
    if (delta <= 0 || delta % extent != 0)
      return false;
    int64_t stride = delta / extent;
    if (extent > 1 && block.mapped.otherStrides[dim] != stride)
      return false;
    if (nextBox.hi[dim] - nextBox.lo[dim] > 1 &&
        next.mapped.otherStrides[dim] != stride)
      return false;
    box.hi[dim] = nextBox.hi[dim];
    block.mapped.otherStrides[dim] = stride;
    return true;
  }
};

/// Merges along one dimension; returns whether anything merged.
bool foldAlong(std::vector<FoldBlock> &blocks, size_t dim) {
  AlongDim along{dim};
  llvm::sort(blocks, along);
  std::vector<FoldBlock> merged;
  merged.reserve(blocks.size());
  for (FoldBlock &block : blocks) {
    if (merged.empty() || !along.tryMerge(merged.back(), block))
      merged.push_back(std::move(block));
  }
  bool changed = merged.size() != blocks.size();
  blocks = std::move(merged);
  return changed;
}

} // namespace

std::vector<FoldBlock> ucp::foldBlocks(std::vector<FoldBlock> blocks) {
  if (blocks.empty())
    return blocks;
  size_t rank = blocks.front().mapped.box.lo.size();
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t d = rank; d-- > 0;)
      changed |= foldAlong(blocks, d);
  }
  return blocks;
}

Extents ucp::getCanonicalStrides(const Box &box, ArrayRef<int64_t> strides) {
  Extents result(strides.begin(), strides.end());
  int64_t inner = 1;
  for (size_t d = result.size(); d-- > 0;) {
    int64_t extent = box.hi[d] - box.lo[d];
    if (extent <= 1)
      result[d] = inner;
    inner = extent * result[d];
  }
  return result;
}

//===- BoxDecomposition.cpp - Strided views as unions of boxes ------------===//

#include "ucp/Analysis/BoxDecomposition.h"

#include <algorithm>

using namespace ucp;
using llvm::ArrayRef;

int64_t Box::getNumElements() const {
  int64_t count = 1;
  for (auto [l, h] : llvm::zip_equal(lo, hi))
    count *= h - l;
  return count;
}

namespace {

/// One dimension of a view after simplification.
struct ViewDim {
  int64_t extent;
  int64_t stride;
};

/// Decomposes simplified views of one buffer.
class Decomposer {
public:
  Decomposer(ArrayRef<int64_t> bufferShape, llvm::SmallVectorImpl<Box> &out)
      : extents(bufferShape), strides(getRowMajorStrides(bufferShape)),
        out(out) {}

  /// Decomposes the view at `offset` with `dims` sorted by decreasing
  /// stride. Returns false when the box budget runs out.
  bool decompose(int64_t offset, ArrayRef<ViewDim> dims);

private:
  /// Returns the buffer dimension whose row-major stride is `stride` and
  /// whose extent exceeds 1, or -1.
  int64_t getBufferDimOfStride(int64_t stride) const;

  /// Appends the boxes of the contiguous range `[begin, end)` of the
  /// flattened buffer dimensions `0..last`, crossed with `inner` (the box of
  /// dimensions after `last`).
  void appendRange(int64_t begin, int64_t end, int64_t last, const Box &inner);

  bool append(Box box) {
    if (static_cast<int64_t>(out.size()) >= kMaxBoxesPerView)
      return false;
    out.push_back(std::move(box));
    return true;
  }

  ArrayRef<int64_t> extents;
  Extents strides;
  llvm::SmallVectorImpl<Box> &out;
};

} // namespace

int64_t Decomposer::getBufferDimOfStride(int64_t stride) const {
  for (size_t d = 0; d < extents.size(); ++d) {
    if (strides[d] == stride && extents[d] > 1)
      return d;
  }
  return -1;
}

bool Decomposer::decompose(int64_t offset, ArrayRef<ViewDim> dims) {
  Extents corner = unravelIndex(offset, extents);
  Box box{corner, corner};
  for (int64_t &h : box.hi)
    h += 1;
  if (dims.empty())
    return append(std::move(box));

  // Map every view dimension onto the buffer dimension it steps along.
  bool mapped = true;
  llvm::SmallVector<int64_t, 4> bufferDims;
  for (const ViewDim &dim : dims) {
    int64_t d = getBufferDimOfStride(dim.stride);
    if (d < 0 || (!bufferDims.empty() && d <= bufferDims.back())) {
      mapped = false;
      break;
    }
    bufferDims.push_back(d);
  }
  if (mapped) {
    bool innerFits = true;
    for (size_t k = 1; k < dims.size(); ++k) {
      int64_t d = bufferDims[k];
      innerFits &= corner[d] + dims[k].extent <= extents[d];
      box.hi[d] = corner[d] + dims[k].extent;
    }
    int64_t outer = bufferDims[0];
    if (innerFits && corner[outer] + dims[0].extent <= extents[outer]) {
      box.hi[outer] = corner[outer] + dims[0].extent;
      return append(std::move(box));
    }
    if (innerFits) {
      // The outer dimension carries into the buffer dimensions above it: it
      // walks a contiguous range of the flattened prefix `0..outer`.
      int64_t begin = offset / strides[outer];
      appendRange(begin, begin + dims[0].extent, outer, box);
      return static_cast<int64_t>(out.size()) <= kMaxBoxesPerView;
    }
  }

  // Enumerate the outermost dimension.
  for (int64_t i = 0; i < dims[0].extent; ++i) {
    if (!decompose(offset + i * dims[0].stride, dims.drop_front()))
      return false;
  }
  return true;
}

void Decomposer::appendRange(int64_t begin, int64_t end, int64_t last,
                             const Box &inner) {
  if (begin >= end)
    return;
  int64_t radix = extents[last];
  auto appendRow = [&](int64_t row, int64_t from, int64_t to) {
    Box box = inner;
    Extents prefix = unravelIndex(row, ArrayRef<int64_t>(extents).take_front(last));
    for (int64_t d = 0; d < last; ++d) {
      box.lo[d] = prefix[d];
      box.hi[d] = prefix[d] + 1;
    }
    box.lo[last] = from;
    box.hi[last] = to;
    out.push_back(std::move(box));
  };
  int64_t firstRow = begin / radix, lastRow = end / radix;
  int64_t headFrom = begin % radix, tailTo = end % radix;
  if (firstRow == lastRow || last == 0) {
    // Within one row of the prefix (or a 1-D prefix, which never carries).
    if (last == 0) {
      Box box = inner;
      box.lo[0] = begin;
      box.hi[0] = end;
      out.push_back(std::move(box));
      return;
    }
    appendRow(firstRow, headFrom, tailTo);
    return;
  }
  if (headFrom != 0) {
    appendRow(firstRow, headFrom, radix);
    ++firstRow;
  }
  if (firstRow < lastRow) {
    Box full = inner;
    full.lo[last] = 0;
    full.hi[last] = radix;
    appendRange(firstRow, lastRow, last - 1, full);
  }
  if (tailTo != 0)
    appendRow(lastRow, 0, tailTo);
}

bool ucp::decomposeView(ArrayRef<int64_t> shape, const StridedView &view,
                        ArrayRef<int64_t> bufferShape, Repeats repeats,
                        llvm::SmallVectorImpl<Box> &out) {
  if (llvm::is_contained(shape, 0))
    return true;

  bool repeated = false;
  llvm::SmallVector<ViewDim, 4> dims;
  for (auto [extent, stride] : llvm::zip_equal(shape, view.strides)) {
    if (extent == 1)
      continue;
    if (stride == 0) {
      repeated = true;
      continue;
    }
    dims.push_back({extent, stride});
  }
  llvm::stable_sort(dims, [](const ViewDim &a, const ViewDim &b) {
    return a.stride > b.stride;
  });
  // Merge each dimension into the one above it when they are contiguous.
  llvm::SmallVector<ViewDim, 4> merged;
  for (const ViewDim &dim : llvm::reverse(dims)) {
    if (!merged.empty() && dim.stride == merged.back().extent * merged.back().stride)
      merged.back().extent *= dim.extent;
    else
      merged.push_back(dim);
  }
  std::reverse(merged.begin(), merged.end());

  size_t first = out.size();
  Decomposer decomposer(bufferShape, out);
  if (!decomposer.decompose(view.offset, merged))
    return false;
  if (repeated && repeats == Repeats::Keep) {
    size_t last = out.size();
    for (size_t i = first; i < last; ++i)
      out.push_back(out[i]);
  }
  return true;
}

//===- BoxDecomposition.cpp - Strided views as unions of boxes ------------===//

#include "ucp/Analysis/BoxDecomposition.h"
#include "ucp/Map/Indexing.h"

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

/// One dimension of a view after simplification, with its stride on the
/// piece's other side.
struct ViewDim {
  int64_t extent;
  int64_t stride;
  int64_t otherStride;
};

/// Decomposes simplified views of one buffer.
class Decomposer {
public:
  Decomposer(ArrayRef<int64_t> bufferShape,
             llvm::SmallVectorImpl<MappedBox> &out)
      : extents(bufferShape), strides(getRowMajorStrides(bufferShape)),
        out(out) {}

  /// Decomposes the view at `offset` (`otherOffset` on the other side) with
  /// `dims` sorted by decreasing stride. Returns false when the box budget
  /// runs out.
  bool decompose(int64_t offset, int64_t otherOffset, ArrayRef<ViewDim> dims);

private:
  /// Returns the buffer dimension whose row-major stride is `stride` and
  /// whose extent exceeds 1, or -1.
  int64_t getBufferDimOfStride(int64_t stride) const;

  /// Appends the boxes of the contiguous range `[begin, end)` of the
  /// flattened buffer dimensions `0..last`, crossed with `inner` (the box of
  /// dimensions after `last`).
  void appendRange(int64_t begin, int64_t end, int64_t last, const Box &inner,
                   llvm::SmallVectorImpl<Box> &boxes);

  bool append(MappedBox box) {
    if (static_cast<int64_t>(out.size()) >= kMaxBoxesPerView)
      return false;
    out.push_back(std::move(box));
    return true;
  }

  ArrayRef<int64_t> extents;
  Extents strides;
  llvm::SmallVectorImpl<MappedBox> &out;
};

} // namespace

int64_t Decomposer::getBufferDimOfStride(int64_t stride) const {
  for (size_t d = 0; d < extents.size(); ++d) {
    if (strides[d] == stride && extents[d] > 1)
      return d;
  }
  return -1;
}

bool Decomposer::decompose(int64_t offset, int64_t otherOffset,
                           ArrayRef<ViewDim> dims) {
  Extents corner = unravelIndex(offset, extents);
  MappedBox mapped{
      {corner, corner}, otherOffset, Extents(extents.size(), kAnyStride)};
  Box &box = mapped.box;
  for (int64_t &h : box.hi)
    h += 1;
  if (dims.empty())
    return append(std::move(mapped));

  // Map every view dimension onto the buffer dimension it steps along.
  bool isMapped = true;
  llvm::SmallVector<int64_t, 4> bufferDims;
  for (const ViewDim &dim : dims) {
    int64_t d = getBufferDimOfStride(dim.stride);
    if (d < 0 || (!bufferDims.empty() && d <= bufferDims.back())) {
      isMapped = false;
      break;
    }
    bufferDims.push_back(d);
  }
  if (isMapped) {
    bool innerFits = true;
    for (size_t k = 1; k < dims.size(); ++k) {
      int64_t d = bufferDims[k];
      innerFits &= corner[d] + dims[k].extent <= extents[d];
      box.hi[d] = corner[d] + dims[k].extent;
      mapped.otherStrides[d] = dims[k].otherStride;
    }
    int64_t outer = bufferDims[0];
    if (innerFits && corner[outer] + dims[0].extent <= extents[outer]) {
      box.hi[outer] = corner[outer] + dims[0].extent;
      mapped.otherStrides[outer] = dims[0].otherStride;
      return append(std::move(mapped));
    }
    if (innerFits) {
      // The outer dimension carries into the buffer dimensions above it: it
      // walks a contiguous range of the flattened prefix `0..outer`, whose
      // element p sits at otherOffset + (p - begin) * otherStride.
      int64_t begin = offset / strides[outer];
      llvm::SmallVector<Box, 8> boxes;
      appendRange(begin, begin + dims[0].extent, outer, box, boxes);
      for (Box &prefixBox : boxes) {
        MappedBox piece = mapped;
        int64_t flat = 0, radix = 1;
        for (int64_t d = outer; d >= 0; --d) {
          flat += prefixBox.lo[d] * radix;
          piece.otherStrides[d] = prefixBox.hi[d] - prefixBox.lo[d] > 1
                                      ? radix * dims[0].otherStride
                                      : kAnyStride;
          radix *= extents[d];
        }
        piece.otherOffset = otherOffset + (flat - begin) * dims[0].otherStride;
        piece.box = std::move(prefixBox);
        if (!append(std::move(piece)))
          return false;
      }
      return true;
    }
  }

  // Enumerate the outermost dimension.
  for (int64_t i = 0; i < dims[0].extent; ++i) {
    if (!decompose(offset + i * dims[0].stride,
                   otherOffset + i * dims[0].otherStride, dims.drop_front()))
      return false;
  }
  return true;
}

void Decomposer::appendRange(int64_t begin, int64_t end, int64_t last,
                             const Box &inner,
                             llvm::SmallVectorImpl<Box> &boxes) {
  if (begin >= end)
    return;
  if (last == 0) {
    // A 1-D prefix never carries.
    Box box = inner;
    box.lo[0] = begin;
    box.hi[0] = end;
    boxes.push_back(std::move(box));
    return;
  }
  int64_t radix = extents[last];
  auto appendRow = [&](int64_t row, int64_t from, int64_t to) {
    Box box = inner;
    Extents prefix =
        unravelIndex(row, ArrayRef<int64_t>(extents).take_front(last));
    for (int64_t d = 0; d < last; ++d) {
      box.lo[d] = prefix[d];
      box.hi[d] = prefix[d] + 1;
    }
    box.lo[last] = from;
    box.hi[last] = to;
    boxes.push_back(std::move(box));
  };
  int64_t firstRow = begin / radix, lastRow = end / radix;
  int64_t headFrom = begin % radix, tailTo = end % radix;
  if (firstRow == lastRow) {
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
    appendRange(firstRow, lastRow, last - 1, full, boxes);
  }
  if (tailTo != 0)
    appendRow(lastRow, 0, tailTo);
}

bool ucp::decomposeMappedView(ArrayRef<int64_t> shape, const StridedView &view,
                              const StridedView &other,
                              ArrayRef<int64_t> bufferShape, Repeats repeats,
                              llvm::SmallVectorImpl<MappedBox> &out) {
  if (llvm::is_contained(shape, 0))
    return true;

  bool repeated = false;
  llvm::SmallVector<ViewDim, 4> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    ViewDim dim{shape[d], view.strides[d], other.strides[d]};
    if (dim.extent == 1)
      continue;
    if (dim.stride == 0 && repeats != Repeats::Enumerate) {
      repeated = true;
      continue;
    }
    dims.push_back(dim);
  }
  // Stride-0 dimensions (kept only to be enumerated) go first, so that the
  // dimensions inside them still decompose into few boxes.
  llvm::stable_sort(dims, [](const ViewDim &a, const ViewDim &b) {
    if ((a.stride == 0) != (b.stride == 0))
      return a.stride == 0;
    return a.stride > b.stride;
  });
  // Merge each dimension into the one above it when both sides are
  // contiguous.
  llvm::SmallVector<ViewDim, 4> merged;
  for (const ViewDim &dim : llvm::reverse(dims)) {
    if (!merged.empty() && dim.stride != 0 &&
        dim.stride == merged.back().extent * merged.back().stride &&
        dim.otherStride == merged.back().extent * merged.back().otherStride)
      merged.back().extent *= dim.extent;
    else
      merged.push_back(dim);
  }
  std::reverse(merged.begin(), merged.end());

  size_t first = out.size();
  Decomposer decomposer(bufferShape, out);
  if (!decomposer.decompose(view.offset, other.offset, merged))
    return false;
  if (repeated && repeats == Repeats::Keep) {
    size_t last = out.size();
    for (size_t i = first; i < last; ++i)
      out.push_back(out[i]);
  }
  return true;
}

bool ucp::decomposeView(ArrayRef<int64_t> shape, const StridedView &view,
                        ArrayRef<int64_t> bufferShape, Repeats repeats,
                        llvm::SmallVectorImpl<Box> &out) {
  llvm::SmallVector<MappedBox> mapped;
  StridedView ignored{0, Extents(shape.size(), 0)};
  if (!decomposeMappedView(shape, view, ignored, bufferShape, repeats, mapped))
    return false;
  for (MappedBox &box : mapped)
    out.push_back(std::move(box.box));
  return true;
}

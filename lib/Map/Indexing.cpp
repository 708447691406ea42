//===- Indexing.cpp - Index arithmetic on shapes and views ----------------===//

#include "ucp/Map/Indexing.h"

#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace ucp;
using llvm::ArrayRef;
using llvm::MutableArrayRef;

std::optional<int64_t> ucp::getNumElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t extent : shape) {
    if (extent < 0 || llvm::MulOverflow(count, extent, count))
      return std::nullopt;
  }
  return count;
}

Extents ucp::getRowMajorStrides(ArrayRef<int64_t> shape) {
  Extents strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

bool ucp::hasRowMajorStrides(ArrayRef<int64_t> shape) {
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 1; --d)
    if (shape[d] < 0 || llvm::MulOverflow(stride, shape[d], stride))
      return false;
  return true;
}

Extents ucp::unravelIndex(int64_t offset, ArrayRef<int64_t> shape) {
  Extents index(shape.size(), 0);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 0)
      continue;
    index[d] = offset % shape[d];
    offset /= shape[d];
  }
  return index;
}

std::optional<int64_t> ucp::getLastOffset(ArrayRef<int64_t> shape,
                                          const StridedView &view) {
  int64_t last = view.offset;
  for (auto [extent, stride] : llvm::zip_equal(shape, view.strides)) {
    int64_t step;
    if (llvm::MulOverflow(extent - 1, stride, step) ||
        llvm::AddOverflow(last, step, last))
      return std::nullopt;
  }
  return last;
}

void ucp::forEachElement(ArrayRef<int64_t> shape, ArrayRef<StridedView> views,
                         llvm::function_ref<void(ArrayRef<int64_t>)> fn) {
  if (llvm::is_contained(shape, 0))
    return;
  Extents index(shape.size(), 0);
  llvm::SmallVector<int64_t, 4> offsets(views.size());
  while (true) {
    for (size_t v = 0; v < views.size(); ++v) {
      offsets[v] = views[v].offset;
      for (size_t d = 0; d < shape.size(); ++d)
        offsets[v] += index[d] * views[v].strides[d];
    }
    fn(offsets);
    if (!advanceIndex(index, shape))
      return;
  }
}

bool ucp::advanceIndex(MutableArrayRef<int64_t> index,
                       ArrayRef<int64_t> shape) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < shape[d])
      return true;
    index[d] = 0;
  }
  return false;
}

std::string ucp::formatList(ArrayRef<int64_t> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(values, os);
  os << ']';
  return text;
}

std::string ucp::formatScale(double scale) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", scale);
  return text;
}

//===----------------------------------------------------------------------===//
// Local invariants
//===----------------------------------------------------------------------===//

/// Checks that every entry of `values` is non-negative.

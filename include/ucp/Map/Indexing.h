//===- Indexing.h - Index arithmetic on shapes and views --------*- C++ -*-===//
//
// Elements of shapes, row-major strides and offsets, multi-indices, and
// how shapes and scales print in messages.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_MAP_INDEXING_H
#define UCP_MAP_INDEXING_H

#include "ucp/Map/ParamMap.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace ucp {

/// Returns the number of elements of `shape`, or nothing if it overflows
/// int64 or an extent is negative.
std::optional<int64_t> getNumElements(llvm::ArrayRef<int64_t> shape);

/// Returns the row-major strides of `shape`.
Extents getRowMajorStrides(llvm::ArrayRef<int64_t> shape);

/// Whether the row-major strides of `shape` fit in int64. A shape of no
/// elements may have strides that do not: [0, 2^40, 2^40].
bool hasRowMajorStrides(llvm::ArrayRef<int64_t> shape);

/// Returns the multi-index of the row-major storage `offset` in `shape`.
Extents unravelIndex(int64_t offset, llvm::ArrayRef<int64_t> shape);

/// Returns the storage offset of the last element of the view `shape` at
/// `view` (the largest offset it touches), or nothing on int64 overflow.
/// The view must be non-empty.
std::optional<int64_t> getLastOffset(llvm::ArrayRef<int64_t> shape,
                                     const StridedView &view);

/// Steps the multi-index `index` to the next one of `shape` in row-major
/// order; returns false, with `index` back at all zeros, after the last.
bool advanceIndex(llvm::MutableArrayRef<int64_t> index,
                  llvm::ArrayRef<int64_t> shape);

/// Calls `fn` with the storage offset on each side of every element of the
/// views `views` (all of `shape`), in row-major order of `shape`. Walks
/// elements one by one: for references and tests, not hot paths.
void forEachElement(llvm::ArrayRef<int64_t> shape,
                    llvm::ArrayRef<StridedView> views,
                    llvm::function_ref<void(llvm::ArrayRef<int64_t>)> fn);

/// Prints a multi-index or shape as `[a, b, c]`.
std::string formatList(llvm::ArrayRef<int64_t> values);

/// Prints a scale in the shortest form that keeps 9 significant digits
/// (`0.25`, `3`, `inf`).
std::string formatScale(double scale);

} // namespace ucp

#endif // UCP_MAP_INDEXING_H

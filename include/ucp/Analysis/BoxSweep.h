//===- BoxSweep.h - Partition a buffer by overlapping boxes -----*- C++ -*-===//
//
// The arrangement of a set of boxes: the buffer `[0, extents)` split into
// disjoint cells such that every box either contains a cell or misses it.
// Each cell is reported with the boxes covering it, so coverage, overlap and
// homogeneity all become questions about cells.
//
// The sweep works one dimension at a time: it sorts where each box starts
// and ends along the dimension, walks those events keeping the set of boxes
// spanning the current slab, and recurses into the next dimension with each
// slab's set. The number of cells depends on how the boxes are arranged,
// never on the number of elements: a row split of [8, 28] and of
// [8192, 28672] give the same cells. A level of k boxes costs O(k log k),
// so disjoint boxes cost O(n log n) in all.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ANALYSIS_BOXSWEEP_H
#define UCP_ANALYSIS_BOXSWEEP_H

#include "ucp/Analysis/BoxDecomposition.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace ucp {

/// Called once per cell with the cell and the indices (ascending) of the
/// boxes covering it; cells no box covers have no owners.
using CellFn =
    llvm::function_ref<void(const Box &cell, llvm::ArrayRef<unsigned> owners)>;

/// Partitions `[0, extents)` by `boxes` and calls `fn` on every non-empty
/// cell, in row-major order of the cells' first elements. Returns the number
/// of cells visited. When `boxVisits` is set, it receives the unit of work
/// of the sweep: how many times a box was sorted into a level (once at the
/// first, then once per slab spanned at each later level), so that tests
/// can hold its cost to O(n log n) without timing it.
int64_t sweepBoxes(llvm::ArrayRef<Box> boxes, llvm::ArrayRef<int64_t> extents,
                   CellFn fn, int64_t *boxVisits = nullptr);

} // namespace ucp

#endif // UCP_ANALYSIS_BOXSWEEP_H

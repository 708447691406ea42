//===- BoxSweep.cpp - Partition a buffer by overlapping boxes -------------===//

#include "ucp/Analysis/BoxSweep.h"

#include <algorithm>

using namespace ucp;
using llvm::ArrayRef;

namespace {

class Sweep {
public:
  Sweep(ArrayRef<Box> boxes, ArrayRef<int64_t> extents, CellFn fn)
      : boxes(boxes), extents(extents), fn(fn) {
    cell.lo.assign(extents.size(), 0);
    cell.hi.assign(extents.begin(), extents.end());
  }

  /// Splits dimension `dim` of the current cell among the `active` boxes
  /// (those covering the cell's extent in every dimension before `dim`).
  void run(size_t dim, ArrayRef<unsigned> active);

  int64_t cells = 0;

private:
  void visit(size_t dim, int64_t lo, int64_t hi, ArrayRef<unsigned> active) {
    cell.lo[dim] = lo;
    cell.hi[dim] = hi;
    run(dim + 1, active);
  }

  ArrayRef<Box> boxes;
  ArrayRef<int64_t> extents;
  CellFn fn;
  Box cell;
};

} // namespace

void Sweep::run(size_t dim, ArrayRef<unsigned> active) {
  if (dim == extents.size() || active.empty()) {
    // Nothing left to cut: the rest of the cell is one piece of geometry.
    for (size_t d = dim; d < extents.size(); ++d) {
      cell.lo[d] = 0;
      cell.hi[d] = extents[d];
    }
    ++cells;
    fn(cell, active);
    return;
  }

  llvm::SmallVector<int64_t, 16> cuts = {0, extents[dim]};
  for (unsigned i : active) {
    cuts.push_back(boxes[i].lo[dim]);
    cuts.push_back(boxes[i].hi[dim]);
  }
  llvm::sort(cuts);
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

  // Walk the slabs, merging neighbours spanned by the same boxes.
  llvm::SmallVector<unsigned, 8> run, slab;
  int64_t runStart = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    int64_t lo = cuts[k], hi = cuts[k + 1];
    slab.clear();
    for (unsigned i : active) {
      if (boxes[i].lo[dim] <= lo && boxes[i].hi[dim] >= hi)
        slab.push_back(i);
    }
    if (k == 0) {
      run = slab;
      continue;
    }
    if (slab == run)
      continue;
    visit(dim, runStart, lo, run);
    runStart = lo;
    run = slab;
  }
  if (cuts.size() > 1)
    visit(dim, runStart, cuts.back(), run);
}

int64_t ucp::sweepBoxes(ArrayRef<Box> boxes, ArrayRef<int64_t> extents,
                        CellFn fn) {
  if (llvm::is_contained(extents, 0))
    return 0;
  llvm::SmallVector<unsigned> all(boxes.size());
  for (unsigned i = 0; i < boxes.size(); ++i)
    all[i] = i;
  Sweep sweep(boxes, extents, fn);
  sweep.run(0, all);
  return sweep.cells;
}

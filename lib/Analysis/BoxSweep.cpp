//===- BoxSweep.cpp - Partition a buffer by overlapping boxes -------------===//
//
// Each level sorts the start and end of every active box along its
// dimension and walks them in order, keeping the set of boxes spanning the
// current slab up to date as boxes start and end. A level with k active
// boxes costs O(k log k) plus the size of the sets it hands down, so that
// the whole sweep costs O(n log n) plus the owners of the cells it visits:
// never the product of the boxes and the cuts, which made a million
// one-element pieces take hours.
//
//===----------------------------------------------------------------------===//

#include "ucp/Analysis/BoxSweep.h"

#include <algorithm>
#include <tuple>

using namespace ucp;
using llvm::ArrayRef;

namespace {

/// A box starting (`starts`) or ending at `position` along a dimension.
struct Event {
  int64_t position;
  unsigned box;
  bool starts;
};

class Sweep {
public:
  Sweep(ArrayRef<Box> boxes, ArrayRef<int64_t> extents, CellFn fn)
      : boxes(boxes), extents(extents), fn(fn) {
    cell.lo.assign(extents.size(), 0);
    cell.hi.assign(extents.begin(), extents.end());
  }

  /// Splits dimension `dim` of the current cell among the `active` boxes
  /// (those covering the cell's extent in every dimension before `dim`,
  /// ascending).
  void run(size_t dim, ArrayRef<unsigned> active);

  int64_t cells = 0;
  int64_t boxVisits = 0;

private:
  void visit(size_t dim, int64_t lo, int64_t hi, ArrayRef<unsigned> owners) {
    cell.lo[dim] = lo;
    cell.hi[dim] = hi;
    run(dim + 1, owners);
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

  boxVisits += active.size();
  std::vector<Event> events;
  events.reserve(2 * active.size());
  for (unsigned i : active) {
    events.push_back({boxes[i].lo[dim], i, true});
    events.push_back({boxes[i].hi[dim], i, false});
  }
  llvm::sort(events, [](const Event &a, const Event &b) {
    return std::tie(a.position, a.box) < std::tie(b.position, b.box);
  });

  // The owners of the slab starting at `slabStart`, ascending. Every event
  // changes them (boxes are non-empty), so slabs between events never need
  // merging. The boxes starting and ending at one position are applied
  // together, by merging sorted lists: one at a time, a million boxes
  // starting at 0 would cost a million insertions into the middle.
  llvm::SmallVector<unsigned, 8> owners, next, starting, ending;
  int64_t slabStart = 0;
  for (size_t e = 0; e < events.size();) {
    int64_t position = events[e].position;
    if (position > slabStart) {
      visit(dim, slabStart, position, owners);
      slabStart = position;
    }
    starting.clear();
    ending.clear();
    for (; e < events.size() && events[e].position == position; ++e)
      (events[e].starts ? starting : ending).push_back(events[e].box);
    next.clear();
    std::set_difference(owners.begin(), owners.end(), ending.begin(),
                        ending.end(), std::back_inserter(next));
    owners.clear();
    std::merge(next.begin(), next.end(), starting.begin(), starting.end(),
               std::back_inserter(owners));
  }
  if (slabStart < extents[dim])
    visit(dim, slabStart, extents[dim], {});
}

int64_t ucp::sweepBoxes(ArrayRef<Box> boxes, ArrayRef<int64_t> extents,
                        CellFn fn, int64_t *boxVisits) {
  if (llvm::is_contained(extents, 0))
    return 0;
  llvm::SmallVector<unsigned> all(boxes.size());
  for (unsigned i = 0; i < boxes.size(); ++i)
    all[i] = i;
  Sweep sweep(boxes, extents, fn);
  sweep.run(0, all);
  if (boxVisits)
    *boxVisits = sweep.boxVisits;
  return sweep.cells;
}

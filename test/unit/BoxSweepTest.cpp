//===- BoxSweepTest.cpp - Partition a buffer by overlapping boxes ---------===//

#include "ucp/Analysis/BoxSweep.h"
#include "ucp/Map/Indexing.h"

#include <gtest/gtest.h>

#include <random>

using namespace ucp;

namespace {

bool contains(const Box &box, llvm::ArrayRef<int64_t> index) {
  for (size_t d = 0; d < index.size(); ++d)
    if (index[d] < box.lo[d] || index[d] >= box.hi[d])
      return false;
  return true;
}

/// Random boxes: the cells tile the buffer exactly once, and every element
/// of a cell is covered by exactly the cell's owners.
TEST(BoxSweep, CellsPartitionTheBufferWithExactOwners) {
  std::mt19937_64 rng(7);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iteration = 0; iteration < 500; ++iteration) {
    Extents extents;
    for (int64_t d = 0, rank = uniform(0, 4); d < rank; ++d)
      extents.push_back(uniform(1, 6));
    std::vector<Box> boxes(uniform(0, 6));
    for (Box &box : boxes) {
      for (int64_t extent : extents) {
        int64_t a = uniform(0, extent - 1), b = uniform(a + 1, extent);
        box.lo.push_back(a);
        box.hi.push_back(b);
      }
    }
    int64_t elements = *getNumElements(extents);
    std::vector<int> seen(elements, 0);
    int64_t cells = sweepBoxes(
        boxes, extents, [&](const Box &cell, llvm::ArrayRef<unsigned> owners) {
          ASSERT_TRUE(llvm::is_sorted(owners));
          Extents cellExtents;
          for (size_t d = 0; d < extents.size(); ++d)
            cellExtents.push_back(cell.hi[d] - cell.lo[d]);
          Extents strides = getRowMajorStrides(extents);
          for (int64_t flat = 0; flat < cell.getNumElements(); ++flat) {
            Extents index = unravelIndex(flat, cellExtents);
            int64_t offset = 0;
            for (size_t d = 0; d < index.size(); ++d) {
              index[d] += cell.lo[d];
              offset += index[d] * strides[d];
            }
            ++seen[offset];
            std::vector<unsigned> expected;
            for (unsigned i = 0; i < boxes.size(); ++i)
              if (contains(boxes[i], index))
                expected.push_back(i);
            ASSERT_EQ(std::vector<unsigned>(owners.begin(), owners.end()),
                      expected);
          }
        });
    EXPECT_GT(cells, 0);
    for (int64_t e = 0; e < elements; ++e)
      ASSERT_EQ(seen[e], 1) << "element " << e << " iteration " << iteration;
  }
}

TEST(BoxSweep, CellCountDependsOnArrangementNotSize) {
  auto columnSplit = [](int64_t rows, int64_t cols) {
    std::vector<Box> boxes;
    for (int64_t r = 0; r < 8; ++r)
      boxes.push_back({{0, r * cols / 8}, {rows, (r + 1) * cols / 8}});
    return sweepBoxes(boxes, {rows, cols}, [](const Box &, auto) {});
  };
  EXPECT_EQ(columnSplit(8, 32), 8);
  EXPECT_EQ(columnSplit(8192, 28672), 8);
}

} // namespace

/// Disjoint one-element boxes scattered over a buffer (the boxes of an
/// index map with no two neighbours in one piece): each box is sorted into
/// each level once, so the work is linear in the boxes, not their square.
TEST(BoxSweep, DisjointBoxesAreVisitedOncePerLevel) {
  std::mt19937_64 rng(11);
  for (Extents extents :
       {Extents{20000}, Extents{200, 100}, Extents{20, 20, 50}}) {
    int64_t elements = *getNumElements(extents);
    std::vector<int64_t> offsets(elements);
    for (int64_t e = 0; e < elements; ++e)
      offsets[e] = e;
    std::shuffle(offsets.begin(), offsets.end(), rng);
    offsets.resize(elements / 2); // Holes between the boxes too.
    std::vector<Box> boxes;
    for (int64_t offset : offsets) {
      Extents lo = unravelIndex(offset, extents), hi = lo;
      for (int64_t &h : hi)
        ++h;
      boxes.push_back({lo, hi});
    }
    int64_t visits = 0;
    int64_t cells = sweepBoxes(
        boxes, extents, [](const Box &, auto) {}, &visits);
    EXPECT_EQ(visits, static_cast<int64_t>(boxes.size() * extents.size()))
        << formatList(extents);
    EXPECT_GE(cells, static_cast<int64_t>(boxes.size()));
  }
}

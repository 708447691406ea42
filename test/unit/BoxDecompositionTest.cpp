//===- BoxDecompositionTest.cpp - Strided views as unions of boxes --------===//

#include "ucp/Analysis/BoxDecomposition.h"
#include "ucp/Map/Indexing.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

using namespace ucp;

namespace {

/// Returns, for every element of `bufferShape`, how many times the view
/// touches it (by enumeration).
std::vector<int> countByWalking(llvm::ArrayRef<int64_t> shape,
                                const StridedView &view,
                                llvm::ArrayRef<int64_t> bufferShape) {
  std::vector<int> counts(*getNumElements(bufferShape), 0);
  int64_t n = *getNumElements(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    Extents index = unravelIndex(flat, shape);
    int64_t offset = view.offset;
    for (size_t d = 0; d < shape.size(); ++d)
      offset += index[d] * view.strides[d];
    ++counts[offset];
  }
  return counts;
}

/// Returns, for every element, how many boxes contain it.
std::vector<int> countByBoxes(llvm::ArrayRef<Box> boxes,
                              llvm::ArrayRef<int64_t> bufferShape) {
  std::vector<int> counts(*getNumElements(bufferShape), 0);
  Extents strides = getRowMajorStrides(bufferShape);
  for (const Box &box : boxes) {
    int64_t n = box.getNumElements();
    Extents extents;
    for (size_t d = 0; d < box.lo.size(); ++d)
      extents.push_back(box.hi[d] - box.lo[d]);
    for (int64_t flat = 0; flat < n; ++flat) {
      Extents index = unravelIndex(flat, extents);
      int64_t offset = 0;
      for (size_t d = 0; d < index.size(); ++d)
        offset += (box.lo[d] + index[d]) * strides[d];
      ++counts[offset];
    }
  }
  return counts;
}

TEST(BoxDecomposition, RowMajorBoxIsOneBox) {
  llvm::SmallVector<Box> boxes;
  // Rank 1 of a column split of [8, 32] at world 2.
  ASSERT_TRUE(
      decomposeView({8, 16}, {16, {32, 1}}, {8, 32}, Repeats::Collapse, boxes));
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].lo, (Extents{0, 16}));
  EXPECT_EQ(boxes[0].hi, (Extents{8, 32}));
}

TEST(BoxDecomposition, FlatRangeAcrossRowsSplitsIntoHeadMiddleTail) {
  llvm::SmallVector<Box> boxes;
  // Elements 5..5+40 of a [4, 6, 8] tensor, read as one flat run.
  ASSERT_TRUE(
      decomposeView({40}, {5, {1}}, {4, 6, 8}, Repeats::Collapse, boxes));
  EXPECT_LE(boxes.size(), 5u);
  EXPECT_EQ(countByBoxes(boxes, {4, 6, 8}),
            countByWalking({40}, {5, {1}}, {4, 6, 8}));
}

TEST(BoxDecomposition, BoxCountDoesNotGrowWithExtents) {
  for (int64_t rows : {8, 8192}) {
    llvm::SmallVector<Box> boxes;
    // A flattened block of full rows plus a partial row at each end.
    ASSERT_TRUE(decomposeView({rows * 28672 - 100}, {50, {1}}, {rows, 28672},
                              Repeats::Collapse, boxes));
    EXPECT_EQ(boxes.size(), 3u) << "rows " << rows;
  }
}

TEST(BoxDecomposition, StrideZeroRepeatsCountTwiceWhenKept) {
  llvm::SmallVector<Box> collapsed, kept;
  ASSERT_TRUE(
      decomposeView({3, 4}, {0, {0, 1}}, {4}, Repeats::Collapse, collapsed));
  ASSERT_TRUE(decomposeView({3, 4}, {0, {0, 1}}, {4}, Repeats::Keep, kept));
  EXPECT_EQ(collapsed.size(), 1u);
  EXPECT_EQ(kept.size(), 2u);
}

TEST(BoxDecomposition, EmptyViewHasNoBoxes) {
  llvm::SmallVector<Box> boxes;
  ASSERT_TRUE(
      decomposeView({0, 8}, {64, {8, 1}}, {8, 8}, Repeats::Keep, boxes));
  EXPECT_TRUE(boxes.empty());
}

TEST(BoxDecomposition, TooManyBoxesIsRefused) {
  llvm::SmallVector<Box> boxes;
  // Every other element of a long vector: one box per element.
  int64_t n = kMaxBoxesPerView + 10;
  EXPECT_FALSE(decomposeView({n}, {0, {2}}, {2 * n}, Repeats::Collapse, boxes));
}

/// Random views inside random buffers: the boxes cover exactly the touched
/// elements; with Repeats::Keep, every element touched more than once is
/// covered more than once.
TEST(BoxDecomposition, RandomViewsMatchEnumeration) {
  std::mt19937_64 rng(42);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iteration = 0; iteration < 3000; ++iteration) {
    Extents buffer;
    for (int64_t d = 0, rank = uniform(1, 4); d < rank; ++d)
      buffer.push_back(uniform(1, 6));
    int64_t bufferElements = *getNumElements(buffer);
    Extents bufferStrides = getRowMajorStrides(buffer);

    Extents shape;
    StridedView view;
    for (int64_t d = 0, rank = uniform(0, 4); d < rank; ++d) {
      shape.push_back(uniform(1, 4));
      // Mostly the buffer's own strides, sometimes anything.
      view.strides.push_back(uniform(0, 2)
                                 ? bufferStrides[uniform(0, buffer.size() - 1)]
                                 : uniform(0, 7));
    }
    std::optional<int64_t> last = getLastOffset(shape, {0, view.strides});
    if (!last || *last >= bufferElements)
      continue;
    view.offset = uniform(0, bufferElements - 1 - *last);

    for (Repeats repeats : {Repeats::Collapse, Repeats::Keep}) {
      llvm::SmallVector<Box> boxes;
      ASSERT_TRUE(decomposeView(shape, view, buffer, repeats, boxes));
      std::vector<int> expected = countByWalking(shape, view, buffer);
      std::vector<int> actual = countByBoxes(boxes, buffer);
      for (int64_t e = 0; e < bufferElements; ++e) {
        ASSERT_EQ(expected[e] > 0, actual[e] > 0)
            << "element " << e << " iteration " << iteration;
        if (repeats == Repeats::Keep) {
          ASSERT_EQ(expected[e] > 1, actual[e] > 1)
              << "element " << e << " iteration " << iteration;
        }
      }
    }
  }
}

/// Random views with random other sides: with Repeats::Enumerate, the
/// mapped boxes list exactly the (element, other offset) pairs of the view.
TEST(BoxDecomposition, MappedBoxesPlaceEveryElement) {
  std::mt19937_64 rng(43);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iteration = 0; iteration < 3000; ++iteration) {
    Extents buffer;
    for (int64_t d = 0, rank = uniform(1, 4); d < rank; ++d)
      buffer.push_back(uniform(1, 6));
    Extents bufferStrides = getRowMajorStrides(buffer);
    Extents shape;
    StridedView view, other;
    for (int64_t d = 0, rank = uniform(0, 4); d < rank; ++d) {
      shape.push_back(uniform(1, 4));
      view.strides.push_back(uniform(0, 2)
                                 ? bufferStrides[uniform(0, buffer.size() - 1)]
                                 : uniform(0, 7));
      other.strides.push_back(uniform(0, 9));
    }
    std::optional<int64_t> last = getLastOffset(shape, {0, view.strides});
    if (!last || *last >= *getNumElements(buffer))
      continue;
    view.offset = uniform(0, *getNumElements(buffer) - 1 - *last);
    other.offset = uniform(0, 20);

    std::multiset<std::pair<int64_t, int64_t>> expected, actual;
    int64_t n = *getNumElements(shape);
    for (int64_t flat = 0; flat < n; ++flat) {
      Extents i = unravelIndex(flat, shape);
      int64_t a = view.offset, b = other.offset;
      for (size_t d = 0; d < i.size(); ++d) {
        a += i[d] * view.strides[d];
        b += i[d] * other.strides[d];
      }
      expected.insert({a, b});
    }
    llvm::SmallVector<MappedBox> boxes;
    ASSERT_TRUE(decomposeMappedView(shape, view, other, buffer,
                                    Repeats::Enumerate, boxes));
    for (const MappedBox &m : boxes) {
      Extents extents;
      for (size_t d = 0; d < buffer.size(); ++d)
        extents.push_back(m.box.hi[d] - m.box.lo[d]);
      for (int64_t flat = 0; flat < m.box.getNumElements(); ++flat) {
        Extents i = unravelIndex(flat, extents);
        int64_t a = 0, b = m.otherOffset;
        for (size_t d = 0; d < i.size(); ++d) {
          a += (m.box.lo[d] + i[d]) * bufferStrides[d];
          if (extents[d] > 1)
            b += i[d] * m.otherStrides[d];
        }
        actual.insert({a, b});
      }
    }
    ASSERT_EQ(actual, expected) << "iteration " << iteration;
  }
}

} // namespace

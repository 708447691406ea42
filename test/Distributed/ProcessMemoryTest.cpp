//===- ProcessMemoryTest.cpp - Copies between processes' memory as runs ---===//
//
// appendRuns lists exactly a view's elements, in row-major order, and
// readProcessMemory moves the bytes of one list of runs into another of
// other lengths, more than one call's worth of runs included: checked on
// random views against an element-by-element copy, reading this process's
// own memory. Failures name the process.
//
//===----------------------------------------------------------------------===//

#include "ProcessMemory.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <unistd.h>

using namespace ucp;

namespace {

/// A random view of `shape` in a buffer of `elements` elements: the
/// dimensions in a random order, each padded, at a random offset.
StridedView drawView(std::mt19937_64 &rng, llvm::ArrayRef<int64_t> shape,
                     int64_t &elements) {
  std::vector<size_t> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  if (rng() % 2)
    std::shuffle(order.begin(), order.end(), rng);
  StridedView view;
  view.strides.assign(shape.size(), 0);
  int64_t stride = 1;
  for (size_t i = order.size(); i-- > 0;) {
    view.strides[order[i]] = stride;
    stride *= shape[order[i]] + static_cast<int64_t>(rng() % 2);
  }
  view.offset = static_cast<int64_t>(rng() % 7);
  elements = view.offset + stride;
  return view;
}

int64_t getIndex(const StridedView &view, llvm::ArrayRef<int64_t> index) {
  int64_t at = view.offset;
  for (size_t d = 0; d < index.size(); ++d)
    at += index[d] * view.strides[d];
  return at;
}

TEST(ProcessMemory, RunsOfRandomViewsCopyAsElementByElement) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> shape;
    size_t rank = 1 + rng() % 4;
    for (size_t d = 0; d < rank; ++d)
      shape.push_back(rng() % 5 == 0 ? 1 : 1 + static_cast<int64_t>(rng() % 9));
    if (trial % 10 == 0)
      shape = {1200, 3}; // More runs than one call takes.
    int64_t sourceElements = 0, targetElements = 0;
    StridedView source = drawView(rng, shape, sourceElements);
    StridedView target = drawView(rng, shape, targetElements);
    std::vector<int32_t> from(sourceElements), to(targetElements, -1),
        want(targetElements, -1);
    std::iota(from.begin(), from.end(), 0);
    std::vector<int64_t> index(shape.size(), 0);
    for (bool more = true; more;) {
      want[getIndex(target, index)] = from[getIndex(source, index)];
      size_t d = shape.size();
      while (d > 0 && ++index[d - 1] == shape[d - 1])
        index[--d] = 0;
      more = d > 0;
    }
    std::vector<iovec> local, remote;
    appendRuns(local, reinterpret_cast<uintptr_t>(to.data()), shape, target,
               sizeof(int32_t));
    appendRuns(remote, reinterpret_cast<uintptr_t>(from.data()), shape, source,
               sizeof(int32_t));
    size_t elements = 1;
    for (int64_t extent : shape)
      elements *= extent;
    EXPECT_EQ(local.size() * local[0].iov_len, elements * sizeof(int32_t));
    llvm::Error error = readProcessMemory(getpid(), local, remote);
    ASSERT_FALSE(error) << llvm::toString(std::move(error));
    ASSERT_EQ(to, want) << "trial " << trial;
  }
}

TEST(ProcessMemory, RunLengthIsTheContiguousSuffix) {
  StridedView rows{0, {8, 1}};
  EXPECT_EQ(getRunElements({4, 8}, rows), 32);
  StridedView columns{0, {16, 1}};
  EXPECT_EQ(getRunElements({4, 8}, columns), 8);
  StridedView transposed{0, {1, 4}};
  EXPECT_EQ(getRunElements({4, 8}, transposed), 1);
  // Unit extents do not break a run, whatever their stride.
  StridedView unit{0, {8, 99, 1}};
  EXPECT_EQ(getRunElements({4, 1, 8}, unit), 32);
}

TEST(ProcessMemory, FailuresNameTheProcess) {
  int32_t value = 5, copy = 0;
  std::vector<iovec> local = {{&copy, sizeof copy}};
  std::vector<iovec> remote = {{&value, sizeof value}};
  // A process id beyond the kernel's largest.
  llvm::Error gone = readProcessMemory(1 << 30, local, remote);
  ASSERT_TRUE(static_cast<bool>(gone));
  EXPECT_NE(llvm::toString(std::move(gone))
                .find("cannot read the memory of process 1073741824"),
            std::string::npos);
  std::vector<iovec> longer = {{&value, sizeof value}, {&value, 1}};
  llvm::Error sizes = readProcessMemory(getpid(), local, longer);
  ASSERT_TRUE(static_cast<bool>(sizes));
  EXPECT_EQ(llvm::toString(std::move(sizes)),
            "the runs of a read differ in size");
}

} // namespace

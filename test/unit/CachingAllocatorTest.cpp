//===- CachingAllocatorTest.cpp - Large outputs, kept for reuse -----------===//

#include "ucp/Support/CachingAllocator.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>

using namespace ucp;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

bool isHugePageAligned(void *buffer) {
  return reinterpret_cast<uintptr_t>(buffer) % (2 * kMiB) == 0;
}

} // namespace

TEST(CachingAllocator, AFreedBufferServesTheNextOfItsSize) {
  CachingAllocator allocator(64 * kMiB);
  void *first = allocator.allocate(3 * kMiB);
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(isHugePageAligned(first));
  std::memset(first, 1, 3 * kMiB);                 // Writable, all of it.
  EXPECT_EQ(allocator.getMappedBytes(), 4 * kMiB); // Whole huge pages.
  EXPECT_EQ(allocator.getKeptBytes(), 0u);
  allocator.release(first);
  EXPECT_EQ(allocator.getKeptBytes(), 4 * kMiB);
  void *again = allocator.allocate(4 * kMiB);
  EXPECT_EQ(again, first);
  EXPECT_EQ(allocator.getKeptBytes(), 0u);
  EXPECT_EQ(allocator.getMappedBytes(), 4 * kMiB);
  allocator.release(again);
}

TEST(CachingAllocator, BestFitAndNeverTwiceTheNeed) {
  CachingAllocator allocator(64 * kMiB);
  void *small = allocator.allocate(4 * kMiB);
  void *large = allocator.allocate(16 * kMiB);
  allocator.release(large);
  allocator.release(small);
  // 3 MiB (4 rounded) fits both: the smaller is taken.
  void *fits = allocator.allocate(3 * kMiB);
  EXPECT_EQ(fits, small);
  // 6 MiB needs less than half of the 16 MiB one: a fresh buffer.
  void *fresh = allocator.allocate(6 * kMiB);
  EXPECT_NE(fresh, large);
  EXPECT_EQ(allocator.getKeptBytes(), 16 * kMiB);
  // 8 MiB is half of it: taken.
  void *half = allocator.allocate(8 * kMiB);
  EXPECT_EQ(half, large);
  EXPECT_EQ(allocator.getMappedBytes(), 26 * kMiB);
  for (void *buffer : {fits, fresh, half})
    allocator.release(buffer);
}

TEST(CachingAllocator, TheLimitUnmapsTheBuffersKeptLongest) {
  CachingAllocator allocator(12 * kMiB);
  void *a = allocator.allocate(4 * kMiB);
  void *b = allocator.allocate(8 * kMiB);
  void *c = allocator.allocate(4 * kMiB);
  allocator.release(a);
  allocator.release(b);
  EXPECT_EQ(allocator.getKeptBytes(), 12 * kMiB);
  allocator.release(c); // 16 MiB kept: `a`, released first, goes.
  EXPECT_EQ(allocator.getKeptBytes(), 12 * kMiB);
  EXPECT_EQ(allocator.getMappedBytes(), 12 * kMiB);
  EXPECT_EQ(allocator.allocate(4 * kMiB), c);
  allocator.setLimit(0);
  EXPECT_EQ(allocator.getKeptBytes(), 0u);
  EXPECT_EQ(allocator.getMappedBytes(), 4 * kMiB); // `c`, in use.
  allocator.release(c);
  EXPECT_EQ(allocator.getMappedBytes(), 0u);
  EXPECT_EQ(allocator.getLimit(), 0u);
}

TEST(CachingAllocator, DefaultLimitIsBounded) {
  size_t limit = CachingAllocator::getDefaultLimit();
  EXPECT_GT(limit, 0u);
  EXPECT_LE(limit, size_t(2) << 30);
  EXPECT_EQ(CachingAllocator::get().getLimit(), limit);
}

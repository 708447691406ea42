//===- CachingAllocator.cpp - Large outputs, kept for reuse ---------------===//

#include "ucp/Support/CachingAllocator.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

#include <sys/mman.h>
#include <unistd.h>

using namespace ucp;

namespace {

constexpr size_t kHugePage = size_t(1) << 21;

size_t roundUpToHugePage(size_t bytes) {
  return (bytes + kHugePage - 1) & ~(kHugePage - 1);
}

/// A fresh private mapping of `bytes` (a multiple of 2 MiB) starting on a
/// 2 MiB boundary, so that all of it can be huge pages; null on failure.
void *mapAligned(size_t bytes) {
  size_t padded = bytes + kHugePage;
  void *mapped = mmap(nullptr, padded, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED)
    return nullptr;
  uintptr_t begin = reinterpret_cast<uintptr_t>(mapped);
  uintptr_t aligned = (begin + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > begin)
    munmap(mapped, aligned - begin);
  size_t tail = begin + padded - (aligned + bytes);
  if (tail > 0)
    munmap(reinterpret_cast<void *>(aligned + bytes), tail);
  void *buffer = reinterpret_cast<void *>(aligned);
#if defined(MADV_HUGEPAGE)
  // A hint: without transparent huge pages the buffer works on 4 KiB ones.
  madvise(buffer, bytes, MADV_HUGEPAGE);
#endif
  return buffer;
}

} // namespace

CachingAllocator &CachingAllocator::get() {
  // Never destroyed: buffers in use may outlive static destruction (a
  // Python interpreter frees its tensors late).
  static CachingAllocator *process = new CachingAllocator(getDefaultLimit());
  return *process;
}

size_t CachingAllocator::getDefaultLimit() {
  size_t limit = size_t(2) << 30;
  long pages = sysconf(_SC_PHYS_PAGES), pageBytes = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageBytes > 0)
    limit = std::min(limit, size_t(pages) * size_t(pageBytes) / 8);
  return limit;
}

void *CachingAllocator::allocate(size_t bytes) {
  size_t size = roundUpToHugePage(std::max<size_t>(bytes, 1));
  {
    std::lock_guard<std::mutex> guard(lock);
    // The smallest kept buffer that fits, unless over twice the need: a
    // larger one would hold its unused part resident for as long as the
    // output lives.
    auto fit = keptBySize.lower_bound({size, 0});
    if (fit != keptBySize.end() && fit->first / 2 <= size) {
      auto [keptSize, age] = *fit;
      void *buffer = keptByAge.at(age);
      keptByAge.erase(age);
      keptBySize.erase(fit);
      keptBytes -= keptSize;
      return buffer;
    }
  }
  void *buffer = mapAligned(size);
  if (!buffer)
    return nullptr;
  std::lock_guard<std::mutex> guard(lock);
  sizes[buffer] = size;
  mappedBytes += size;
  return buffer;
}

void CachingAllocator::release(void *buffer) {
  std::lock_guard<std::mutex> guard(lock);
  auto found = sizes.find(buffer);
  assert(found != sizes.end() && "not a buffer of this allocator's");
  size_t size = found->second;
  unsigned long long age = ++releases;
  keptByAge[age] = buffer;
  keptBySize.emplace(size, age);
  keptBytes += size;
  trimTo(limit);
}

void CachingAllocator::setLimit(size_t bytes) {
  std::lock_guard<std::mutex> guard(lock);
  limit = bytes;
  trimTo(limit);
}

void CachingAllocator::releaseKept() {
  std::lock_guard<std::mutex> guard(lock);
  trimTo(0);
}

size_t CachingAllocator::getLimit() const {
  std::lock_guard<std::mutex> guard(lock);
  return limit;
}

size_t CachingAllocator::getKeptBytes() const {
  std::lock_guard<std::mutex> guard(lock);
  return keptBytes;
}

size_t CachingAllocator::getMappedBytes() const {
  std::lock_guard<std::mutex> guard(lock);
  return mappedBytes;
}

void CachingAllocator::trimTo(size_t bytes) {
  while (keptBytes > bytes) {
    auto [age, buffer] = *keptByAge.begin();
    size_t size = sizes.find(buffer)->second;
    keptBySize.erase({size, age});
    keptByAge.erase(age);
    sizes.erase(buffer);
    keptBytes -= size;
    mappedBytes -= size;
    munmap(buffer, size);
  }
}

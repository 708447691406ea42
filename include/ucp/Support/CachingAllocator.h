//===- CachingAllocator.h - Large outputs, kept for reuse -------*- C++ -*-===//
//
// Memory the kernel hands out fresh is zeroed and mapped page by page on
// its first write, and for a large output that costs more than the copy
// into it (on a virtual machine, a 4 KiB page fault costs about nine times
// the writing of its 4 KiB). The C library maps every allocation above
// 32 MiB afresh and unmaps it when freed, so a caller that rebuilds tensor
// after tensor pays this on every call. The caching allocator maps large
// buffers itself, on transparent huge pages (one fault per 2 MiB), and
// keeps a buffer that is freed for the next allocation of about its size,
// as a GPU caching allocator does; what it keeps unused is bounded by a
// limit. docs/Python.md has the measurements.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_CACHINGALLOCATOR_H
#define UCP_SUPPORT_CACHINGALLOCATOR_H

#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace ucp {

/// Large buffers, each a mapping of its own aligned to 2 MiB and asking for
/// transparent huge pages, kept when freed (up to a limit) and handed back
/// to a later allocation that needs at least half of one. Thread-safe.
class CachingAllocator {
public:
  /// The process's allocator, with the default limit.
  static CachingAllocator &get();

  /// The default limit: 2 GiB, or an eighth of physical memory if less.
  static size_t getDefaultLimit();

  explicit CachingAllocator(size_t limit) : limit(limit) {}
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;
  /// Unmaps what it keeps; buffers still in use stay mapped.
  ~CachingAllocator() { releaseKept(); }

  /// A buffer of at least `bytes` (more than zero), 2 MiB aligned: a kept
  /// one where one fits, else a fresh mapping. Null where memory cannot be
  /// mapped. Its contents are unspecified.
  void *allocate(size_t bytes);

  /// Gives back `buffer`, from allocate: kept for reuse, then the buffers
  /// kept longest are unmapped until the kept bytes are within the limit.
  void release(void *buffer);

  /// Sets the most bytes kept unused (0: none; every kept buffer is then
  /// unmapped), unmapping the oldest kept buffers to fit.
  void setLimit(size_t bytes);
  size_t getLimit() const;

  /// Unmaps every kept buffer; the limit stays.
  void releaseKept();

  /// The bytes kept unused, and mapped in all (kept and in use).
  size_t getKeptBytes() const;
  size_t getMappedBytes() const;

private:
  /// Unmaps the buffers kept longest until the kept bytes are at most
  /// `bytes`.
  void trimTo(size_t bytes);

  mutable std::mutex lock;
  size_t limit;
  /// Every buffer mapped (kept or in use), by address: its size.
  std::map<void *, size_t> sizes;
  /// The kept buffers, by the order they were released: address.
  std::map<unsigned long long, void *> keptByAge;
  /// The kept buffers by size (for best fit), then release order.
  std::set<std::pair<size_t, unsigned long long>> keptBySize;
  unsigned long long releases = 0;
  size_t keptBytes = 0, mappedBytes = 0;
};

} // namespace ucp

#endif // UCP_SUPPORT_CACHINGALLOCATOR_H

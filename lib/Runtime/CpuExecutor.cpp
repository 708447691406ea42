//===- CpuExecutor.cpp - Running copy programs on the CPU -----------------===//

#include "ucp/Runtime/CpuExecutor.h"

#include <atomic>
#include <cstring>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

using namespace ucp;

namespace {

/// One unit of work: a copy or a fill.
struct WorkItem {
  const StridedCopy *copy = nullptr;
  const StridedFill *fill = nullptr;
  const char *source = nullptr;
  char *target = nullptr;
  int64_t elements = 0;
};

/// Copies at least this many bytes per work item with streaming stores: the
/// written data is not read again soon, and bypassing the cache saves the
/// read-for-ownership of every destination line (what glibc's memcpy does
/// for large copies).
constexpr int64_t kStreamingBytes = int64_t(1) << 20;

/// Copies `bytes` bytes with non-temporal stores where the destination
/// allows (16-byte aligned), plain memcpy for the edges.
void streamCopy(char *dst, const char *src, int64_t bytes) {
#if defined(__SSE2__)
  int64_t head = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
  if (head >= bytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  int64_t vectors = bytes / 16;
  for (int64_t i = 0; i < vectors; ++i)
    _mm_stream_si128(
        reinterpret_cast<__m128i *>(dst) + i,
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(src) + i));
  std::memcpy(dst + vectors * 16, src + vectors * 16, bytes - vectors * 16);
#else
  std::memcpy(dst, src, bytes);
#endif
}

/// Copies `count` elements of type T between strided places.
template <typename T>
void copyStrided(char *dst, int64_t dstStride, const char *src,
                 int64_t srcStride, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    reinterpret_cast<T *>(dst)[i * dstStride] =
        reinterpret_cast<const T *>(src)[i * srcStride];
}

/// Copies (or, with no source, zeroes) every innermost run of `shape`.
void runStrided(llvm::ArrayRef<int64_t> shape, const StridedView *source,
                const StridedView &target, const char *from, char *to,
                int64_t size, double factor, DType type, bool streaming) {
  if (llvm::is_contained(shape, 0))
    return;
  size_t rank = shape.size();
  int64_t inner = rank ? shape.back() : 1;
  int64_t innerTarget = rank ? target.strides.back() : 1;
  int64_t innerSource = rank && source ? source->strides.back() : 1;
  bool contiguous = innerTarget == 1 && (!source || innerSource == 1);
  Extents index(rank ? rank - 1 : 0, 0);
  while (true) {
    int64_t t = target.offset, s = source ? source->offset : 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      t += index[d] * target.strides[d];
      if (source)
        s += index[d] * source->strides[d];
    }
    char *dst = to + t * size;
    if (!source) {
      if (innerTarget == 1)
        std::memset(dst, 0, inner * size);
      else
        for (int64_t i = 0; i < inner; ++i)
          std::memset(dst + i * innerTarget * size, 0, size);
    } else if (contiguous) {
      if (streaming)
        streamCopy(dst, from + s * size, inner * size);
      else
        std::memcpy(dst, from + s * size, inner * size);
      if (factor != 1.0)
        scaleElements(type, dst, inner, factor);
    } else {
      const char *src = from + s * size;
      switch (size) {
      case 1:
        copyStrided<uint8_t>(dst, innerTarget, src, innerSource, inner);
        break;
      case 2:
        copyStrided<uint16_t>(dst, innerTarget, src, innerSource, inner);
        break;
      case 4:
        copyStrided<uint32_t>(dst, innerTarget, src, innerSource, inner);
        break;
      default:
        copyStrided<uint64_t>(dst, innerTarget, src, innerSource, inner);
        break;
      }
      if (factor != 1.0)
        for (int64_t i = 0; i < inner; ++i)
          scaleElements(type, dst + i * innerTarget * size, 1, factor);
    }
    // Next outer index.
    int64_t d = static_cast<int64_t>(index.size()) - 1;
    for (; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

} // namespace

void ucp::executeOnCpu(const CopyProgram &program,
                       const ProgramBuffers &buffers, DType type,
                       unsigned threads) {
  int64_t size = getElementSize(type);
  std::vector<WorkItem> items;
  for (const BufferPairCopies &pair : program.pairs) {
    const char *source =
        static_cast<const char *>(buffers.sources.at(pair.sourceBuffer));
    char *target = static_cast<char *>(buffers.targets.at(pair.targetBuffer));
    for (const StridedCopy &copy : pair.copies)
      items.push_back({&copy, nullptr, source, target,
                       getNumElements(copy.shape).value_or(0)});
  }
  for (const StridedFill &fill : program.fills)
    items.push_back({nullptr, &fill, nullptr,
                     static_cast<char *>(buffers.targets.at(fill.targetBuffer)),
                     getNumElements(fill.shape).value_or(0)});
  // Largest first, so the tail of the schedule is made of small items.
  llvm::stable_sort(items, [](const WorkItem &a, const WorkItem &b) {
    return a.elements > b.elements;
  });

  auto run = [&](const WorkItem &item) {
    if (item.fill) {
      runStrided(item.fill->shape, nullptr, item.fill->target, nullptr,
                 item.target, size, 1.0, type, false);
      return;
    }
    // A scaled copy reads back what it wrote: keep it in the cache.
    bool streaming =
        item.copy->factor == 1.0 && item.elements * size >= kStreamingBytes;
    runStrided(item.copy->shape, &item.copy->source, item.copy->target,
               item.source, item.target, size, item.copy->factor, type,
               streaming);
#if defined(__SSE2__)
    if (streaming)
      _mm_sfence(); // Streaming stores are weakly ordered.
#endif
  };
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<size_t>(threads, items.size());
  if (threads <= 1) {
    for (const WorkItem &item : items)
      run(item);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i = next++; i < items.size(); i = next++)
        run(items[i]);
    });
  for (std::thread &thread : pool)
    thread.join();
}

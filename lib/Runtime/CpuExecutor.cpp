//===- CpuExecutor.cpp - Running copy programs on the CPU -----------------===//

#include "ucp/Runtime/CpuExecutor.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Threading.h"

#include <atomic>
#include <cassert>
#include <cstring>
#include <pthread.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
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
  /// The band [outerBegin, outerEnd) of the outermost dimension it covers.
  int64_t outerBegin = 0;
  int64_t outerEnd = 0;
  /// Whether it is a band of a copy with short runs (see below).
  bool banded = false;
  /// Whether the whole copy is large and unscaled: streaming stores.
  bool streaming = false;
};

/// The offset, in elements, at which `item`'s band starts in `view`, a view
/// of its copy or fill.
int64_t getBandOffset(const WorkItem &item, const StridedView &view) {
  return view.strides.empty()
             ? view.offset
             : view.offset + item.outerBegin * view.strides.front();
}

/// A cache line: the unit the caches and write-combining buffers move.
constexpr int64_t kLineBytes = 64;

/// A copy whose contiguous runs are shorter than this reads a few bytes of
/// each source row (a column split with narrow shards). Such copies run in
/// bands of kBandElements elements, in source order, so that the copies
/// reading one band of rows run while it is in cache: about 1.7x faster
/// for 256-byte runs, measured in-process against whole-copy order.
constexpr int64_t kShortRunBytes = 1024;
constexpr int64_t kBandElements = int64_t(1) << 14;

/// Copies at least this many bytes per work item with streaming stores: the
/// written data is not read again soon, and bypassing the cache saves the
/// read-for-ownership of every destination line (what glibc's memcpy does
/// for large copies).
constexpr int64_t kStreamingBytes = int64_t(1) << 20;

/// Runs at least this long stream 32-byte vectors where the processor can.
constexpr int64_t kWideRunBytes = 4096;

/// Runs of at least kChunksPerBlock * kChunkBytes stream in blocks of
/// kChunksPerBlock chunks, a cache line of each chunk in turn (see
/// streamVectors32).
constexpr int64_t kChunkBytes = 4096;
constexpr int64_t kChunksPerBlock = 4;

#if defined(__x86_64__)
#define UCP_HAVE_X86_VECTOR_PATHS 1
/// Streams the 32-byte vector number `vector` of `src` to `dst`.
__attribute__((target("avx2"))) inline void
streamVector32(char *dst, const char *src, int64_t vector) {
  _mm256_stream_si256(
      reinterpret_cast<__m256i *>(dst) + vector,
      _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src) + vector));
}

/// Streams `count` 32-byte vectors to the 32-byte aligned `dst`. Built for
/// AVX2 and chosen at run time (the project targets baseline x86-64) for
/// runs of at least kWideRunBytes: 20% more bandwidth than 16-byte stores
/// on row splits, measured in-process; on 256-byte runs it was slower.
/// Whole blocks of four 4 KiB chunks go a cache line of each chunk in turn,
/// as glibc's memcpy moves large copies: four streams keep more memory
/// pages busy than one. 1.17-1.24x on runs of 16 KiB to 32 MiB, whether
/// 64 MiB in all (in the cache) or 1 GiB, measured in-process; a median of
/// 1.12x on the benchmark's row split (4 of 5 alternated runs faster).
__attribute__((target("avx2"))) void streamVectors32(char *dst, const char *src,
                                                     int64_t count) {
  constexpr int64_t chunk = kChunkBytes / 32, chunks = kChunksPerBlock;
  int64_t i = 0;
  for (; i + chunks * chunk <= count; i += chunks * chunk)
    for (int64_t line = 0; line < chunk; line += 2)
      for (int64_t c = 0; c < chunks; ++c) {
        streamVector32(dst, src, i + c * chunk + line);
        streamVector32(dst, src, i + c * chunk + line + 1);
      }
  for (; i < count; ++i)
    streamVector32(dst, src, i);
}

/// Streams `count` runs of `bytes` bytes, a whole number of cache lines,
/// to 32-byte aligned places, a line of each run in turn.
__attribute__((target("avx2"))) void
streamRunsInterleaved(char *const *dst, const char *const *src, int count,
                      int64_t bytes) {
  for (int64_t line = 0; line < bytes / 32; line += 2)
    for (int run = 0; run < count; ++run) {
      streamVector32(dst[run], src[run], line);
      streamVector32(dst[run], src[run], line + 1);
    }
}

bool hasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

/// Streams `lines` cache lines of `src` to the 64-byte aligned `dst`, one
/// 64-byte store per line: each store fills a whole write-combining buffer.
/// Built for AVX-512 and chosen at run time for the short runs of column
/// splits. Measured in-process on 64 MiB column splits read in bands
/// (medians of 21 alternated runs): 1.07x on 64-byte runs, 1.18x on 128,
/// 1.11x on 256, 1.05x on 512, 1.19x on 768, each faster in 18 to 21 of
/// 21; 1.12x on 256-byte runs at 512 MiB, beyond the last-level cache (9 of
/// 9). On runs of 4 KiB and more, and on the four-run batches, it gained
/// nothing over 32-byte stores.
__attribute__((target("avx512f"))) inline void
streamLines64(char *dst, const char *src, int64_t lines) {
  for (int64_t line = 0; line < lines; ++line)
    _mm512_stream_si512(
        reinterpret_cast<__m512i *>(dst) + line,
        _mm512_loadu_si512(reinterpret_cast<const __m512i *>(src) + line));
}

bool hasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}
#endif

#if defined(__SSE2__)
/// Streams `width` (4, 8 or 16) bytes to `dst`, aligned to `width`.
inline void streamPiece(char *dst, const char *src, int64_t width) {
  if (width == 4) {
    int value;
    std::memcpy(&value, src, 4);
    _mm_stream_si32(reinterpret_cast<int *>(dst), value);
  } else if (width == 8) {
    long long value;
    std::memcpy(&value, src, 8);
    _mm_stream_si64(reinterpret_cast<long long *>(dst), value);
  } else {
    _mm_stream_si128(reinterpret_cast<__m128i *>(dst),
                     _mm_loadu_si128(reinterpret_cast<const __m128i *>(src)));
  }
}
#endif

/// Copies `bytes` bytes with non-temporal stores. The edges are streamed
/// too, in pieces of 4, 8 and 16 bytes, up to the vector alignment: a plain
/// store into a line that streaming stores also write costs a
/// read-for-ownership and a flush of the write-combining buffer (with rows
/// of 256 bytes aligned to 16, plain edges made 32-byte streaming 2.5x
/// slower). Only bytes before the first 4-byte boundary are stored plainly.
inline void streamCopy(char *dst, const char *src, int64_t bytes) {
#if defined(__SSE2__)
  int64_t width = 16;
#if UCP_HAVE_X86_VECTOR_PATHS
  if (bytes >= kWideRunBytes && hasAvx2())
    width = 32;
#endif
  auto offset = [&](int64_t alignment) {
    return reinterpret_cast<uintptr_t>(dst) % alignment;
  };
#if UCP_HAVE_X86_VECTOR_PATHS
  if (width == 16 && !offset(kLineBytes) && bytes % kLineBytes == 0 &&
      hasAvx512()) {
    // A short run of whole lines that starts on a line.
    streamLines64(dst, src, bytes / kLineBytes);
    return;
  }
#endif
  if (width == 16 && !offset(16) && bytes % 16 == 0) {
    // The common short run: whole vectors, nothing else to decide.
    for (int64_t i = 0; i < bytes / 16; ++i)
      streamPiece(dst + i * 16, src + i * 16, 16);
    return;
  }
  for (; bytes > 0 && offset(4); --bytes)
    *dst++ = *src++;
  for (int64_t piece = 4; piece < width; piece *= 2)
    if (offset(2 * piece) && bytes >= piece) {
      streamPiece(dst, src, piece);
      dst += piece;
      src += piece;
      bytes -= piece;
    }
  int64_t vectors = offset(width) ? 0 : bytes / width;
#if UCP_HAVE_X86_VECTOR_PATHS
  if (width == 32)
    streamVectors32(dst, src, vectors);
  else
#endif
    for (int64_t i = 0; i < vectors; ++i)
      streamPiece(dst + i * 16, src + i * 16, 16);
  dst += vectors * width;
  src += vectors * width;
  bytes -= vectors * width;
  for (int64_t piece = 16; piece >= 4; piece /= 2)
    while (bytes >= piece && !offset(piece)) {
      streamPiece(dst, src, piece);
      dst += piece;
      src += piece;
      bytes -= piece;
    }
  if (bytes)
    std::memcpy(dst, src, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

/// Streams runs of one length four at a time: runs of kShortRunBytes up to
/// one block of streamVectors32 go a line of each run in turn, as
/// streamVectors32 moves the chunks of a long run. Measured in-process on
/// column splits (medians of 15 alternated runs, at least 13 faster):
/// 1.07x and 1.09x on runs of 1 and 4 KiB, 64 MiB in all; 1.14x and 1.25x
/// at 512 MiB, beyond the last-level cache (1.14-1.66x on the benchmark's
/// 4 KiB column split grown to 512 MiB, 5 of 5 alternated runs faster).
/// Shorter runs, read in bands, were slower in 5 of 6 alternated runs of
/// the benchmark and go one at a time.
class StreamedRunBatch {
public:
  explicit StreamedRunBatch(int64_t bytes) : bytes(bytes) {
#if UCP_HAVE_X86_VECTOR_PATHS
    interleavable = bytes % kLineBytes == 0 && bytes >= kShortRunBytes &&
                    bytes < kChunksPerBlock * kChunkBytes && hasAvx2();
#endif
  }
  ~StreamedRunBatch() { flush(); }

  void add(char *dst, const char *src) {
    if (!interleavable) {
      streamCopy(dst, src, bytes);
      return;
    }
    dsts[count] = dst;
    srcs[count] = src;
    if (++count == kRuns)
      flush();
  }

  void flush() {
#if UCP_HAVE_X86_VECTOR_PATHS
    if (count == kRuns && llvm::all_of(dsts, [](char *dst) {
          return reinterpret_cast<uintptr_t>(dst) % 32 == 0;
        })) {
      streamRunsInterleaved(dsts, srcs, kRuns, bytes);
      count = 0;
      return;
    }
#endif
    for (int run = 0; run < count; ++run)
      streamCopy(dsts[run], srcs[run], bytes);
    count = 0;
  }

private:
  static constexpr int kRuns = 4;
  int64_t bytes;
  /// Whether the runs are of a length that goes four at a time.
  bool interleavable = false;
  char *dsts[kRuns];
  const char *srcs[kRuns];
  int count = 0;
};

/// A copy whose runs are at least kPrefetchMinRunBytes and shorter than
/// kShortRunBytes asks for the source run about kPrefetchBytes of runs
/// ahead while it copies the current one: the hardware prefetchers do not
/// follow a stride of whole rows. Measured in-process on 64 MiB column
/// splits (medians of 21 alternated runs): 1.13x on 128-byte runs, 1.22x
/// on 256, 1.15x on 512, 1.20x on 768, each faster in 20 or 21 of 21; runs
/// of one line gained nothing (64 bytes: 0.95x at 8 rows, 1.01x at 32).
constexpr int64_t kPrefetchBytes = 2048;
constexpr int64_t kPrefetchMinRunBytes = 128;

/// Asks for the cache lines of the `bytes` bytes that start `ahead` bytes
/// past `address` to be loaded: into every level of the cache with
/// `Locality` 3, into the second level and beyond with 1. The place may lie
/// past the end of a buffer (a prefetch never faults), so it is computed as
/// a number.
template <int Locality = 3>
inline void prefetchBytes(const char *address, int64_t ahead, int64_t bytes) {
  uintptr_t start = reinterpret_cast<uintptr_t>(address) + ahead;
  uintptr_t end = start + bytes;
  for (uintptr_t line = start & ~uintptr_t(kLineBytes - 1); line < end;
       line += kLineBytes)
    __builtin_prefetch(reinterpret_cast<const void *>(line), 0, Locality);
}

#if UCP_HAVE_X86_VECTOR_PATHS
/// Streams `rows` rows of `lines` cache lines each, `dstStride` and
/// `srcStride` bytes apart, to 64-byte aligned rows (see streamLines64),
/// asking for each row's source `aheadRows` rows ahead (none when 0) as
/// runStrided does. One loop for the rows of a column split, against
/// copying them run by run through streamCopy, on the benchmark's 256-byte
/// column split: 1.02-1.21x in 7 of 8 series of 21 alternated in-process
/// runs (0.97x in the eighth); a median of 1.05x in the benchmark binary
/// (10 of 16 alternated runs faster).
__attribute__((target("avx512f"))) void
streamRowsOfLines64(char *dst, int64_t dstStride, const char *src,
                    int64_t srcStride, int64_t rows, int64_t lines,
                    int64_t aheadRows) {
  for (int64_t row = 0; row < rows; ++row, dst += dstStride, src += srcStride) {
    if (aheadRows && row + aheadRows < rows)
      prefetchBytes(src, aheadRows * srcStride, lines * kLineBytes);
    streamLines64(dst, src, lines);
  }
}

/// The rows of one band that stream as whole lines: `lines` cache lines per
/// row, rows `dstStride` and `srcStride` bytes apart.
struct LineRows {
  char *dst;
  int64_t dstStride;
  const char *src;
  int64_t srcStride;
  int64_t lines;
};

/// Bands streamed row by row read their source front to back, and ask for
/// it this far ahead, into the second-level cache: the hardware prefetchers
/// alone fall behind when memory is slow. Measured in-process on the
/// benchmark's 256-byte column split: 1.02-1.06x over no prefetch (three
/// series of 21 alternated runs, 16 to 18 faster).
constexpr int64_t kSequentialPrefetchBytes = 4096;

/// Streams `rows` rows of every band of `bands`, row by row: the run of each
/// band in turn, then the next row (see streamRowsOfLines64).
__attribute__((target("avx512f"))) void
streamRowsOfLines64Together(llvm::MutableArrayRef<LineRows> bands,
                            int64_t rows) {
  for (int64_t row = 0; row < rows; ++row)
    for (LineRows &band : bands) {
      prefetchBytes</*Locality=*/1>(band.src, kSequentialPrefetchBytes,
                                    band.lines * kLineBytes);
      streamLines64(band.dst, band.src, band.lines);
      band.dst += band.dstStride;
      band.src += band.srcStride;
    }
}
#endif

/// Copies `count` elements of type T between strided places. The buffers
/// need not be aligned to T (a tensor file does not promise it): elements
/// move through memcpy, which compiles to plain loads and stores.
template <typename T>
void copyStrided(char *dst, int64_t dstStride, const char *src,
                 int64_t srcStride, int64_t count) {
  constexpr int64_t size = sizeof(T);
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * dstStride * size, src + i * srcStride * size, size);
}

/// Calls `visit(targetOffset, sourceOffset)`, offsets in elements, for the
/// first run of every block of rows of `shape` (its two innermost
/// dimensions), or once for a shape of fewer than two dimensions.
template <typename Visit>
void forEachRowBlock(llvm::ArrayRef<int64_t> shape, const StridedView &target,
                     const StridedView *source, Visit visit) {
  size_t rank = shape.size();
  Extents index(rank < 2 ? 0 : rank - 2, 0);
  while (true) {
    int64_t t = target.offset, s = source ? source->offset : 0;
    for (size_t d = 0; d < index.size(); ++d) {
      t += index[d] * target.strides[d];
      if (source)
        s += index[d] * source->strides[d];
    }
    visit(t, s);
    if (index.empty() || !advanceIndex(index, shape.take_front(rank - 2)))
      return;
  }
}

/// Calls `visit(targetOffset, sourceOffset, rowsAfter)`, offsets in
/// elements, for every innermost run of `shape`; `rowsAfter` counts the runs
/// that follow in the same second-innermost loop. That loop is a plain loop
/// of pointer steps: with short runs (a column split) the per-run cost is a
/// large share of the time, so no index arithmetic is redone per run.
template <typename Visit>
void forEachRun(llvm::ArrayRef<int64_t> shape, const StridedView &target,
                const StridedView *source, Visit visit) {
  size_t rank = shape.size();
  int64_t rows = rank < 2 ? 1 : shape[rank - 2];
  int64_t rowTarget = rank < 2 ? 0 : target.strides[rank - 2];
  int64_t rowSource = rank < 2 || !source ? 0 : source->strides[rank - 2];
  forEachRowBlock(shape, target, source, [&](int64_t t, int64_t s) {
    for (int64_t row = 0; row < rows; ++row, t += rowTarget, s += rowSource)
      visit(t, s, rows - 1 - row);
  });
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
  if (!source) {
    forEachRun(shape, target, source, [&](int64_t t, int64_t, int64_t) {
      char *dst = to + t * size;
      if (innerTarget == 1)
        std::memset(dst, 0, inner * size);
      else
        for (int64_t i = 0; i < inner; ++i)
          std::memset(dst + i * innerTarget * size, 0, size);
    });
    return;
  }
  if (contiguous) {
    int64_t bytes = inner * size;
    bool prefetch =
        rank >= 2 && bytes >= kPrefetchMinRunBytes && bytes < kShortRunBytes;
    int64_t aheadRows = kPrefetchBytes / bytes;
    int64_t ahead = prefetch ? aheadRows * source->strides[rank - 2] * size : 0;
    auto copyRuns = [&](auto copyRun) {
      forEachRun(shape, target, source,
                 [&](int64_t t, int64_t s, int64_t rowsAfter) {
                   if (prefetch && rowsAfter >= aheadRows)
                     prefetchBytes(from + s * size, ahead, bytes);
                   copyRun(to + t * size, from + s * size, bytes);
                   if (factor != 1.0)
                     scaleElements(type, to + t * size, inner, factor);
                 });
    };
#if UCP_HAVE_X86_VECTOR_PATHS
    // Short runs of whole lines, each starting on a line: one loop per block
    // of rows.
    auto startsOnLine = [&](int64_t offset) {
      return offset * size % kLineBytes == 0;
    };
    if (streaming && rank >= 2 && bytes % kLineBytes == 0 &&
        bytes < kShortRunBytes &&
        reinterpret_cast<uintptr_t>(to) % kLineBytes == 0 &&
        startsOnLine(target.offset) &&
        llvm::all_of(llvm::ArrayRef(target.strides).drop_back(),
                     startsOnLine) &&
        hasAvx512()) {
      forEachRowBlock(shape, target, source, [&](int64_t t, int64_t s) {
        streamRowsOfLines64(to + t * size, target.strides[rank - 2] * size,
                            from + s * size, source->strides[rank - 2] * size,
                            shape[rank - 2], bytes / kLineBytes,
                            prefetch ? aheadRows : 0);
      });
      return;
    }
#endif
    if (streaming) {
      // Runs are copied later, a batch at a time: nothing may follow a copy.
      assert(factor == 1.0 && "streamed copies are unscaled");
      StreamedRunBatch batch(bytes);
      copyRuns(
          [&](char *dst, const char *src, int64_t) { batch.add(dst, src); });
    } else
      copyRuns([](char *dst, const char *src, int64_t n) {
        std::memcpy(dst, src, n);
      });
    return;
  }
  auto copyElements = [&](auto element) {
    using T = decltype(element);
    forEachRun(shape, target, source, [&](int64_t t, int64_t s, int64_t) {
      copyStrided<T>(to + t * size, innerTarget, from + s * size, innerSource,
                     inner);
      if (factor != 1.0)
        for (int64_t i = 0; i < inner; ++i)
          scaleElements(type, to + (t + i * innerTarget) * size, 1, factor);
    });
  };
  switch (size) {
  case 1:
    return copyElements(uint8_t());
  case 2:
    return copyElements(uint16_t());
  case 4:
    return copyElements(uint32_t());
  default:
    return copyElements(uint64_t());
  }
}

/// Runs `group`, bands that read the same source rows, row by row when
/// together they read whole rows in order and each streams its rows as
/// whole lines (a column split into equal shards whose rows are whole
/// lines): the source is then read front to back, which the hardware
/// prefetchers follow, instead of band by band, a stride of rows each. On
/// the benchmark's 256-byte column split, against band by band: 1.05-1.08x
/// on one thread (two series of 21 alternated in-process runs, all faster),
/// 1.07x on two (15 of 15). Returns false, having run nothing, otherwise.
bool streamBandsRowByRow(llvm::ArrayRef<WorkItem> group, int64_t size) {
#if UCP_HAVE_X86_VECTOR_PATHS
  if (group.size() < 2 || !hasAvx512())
    return false;
  const WorkItem &first = group.front();
  if (!first.copy)
    return false;
  int64_t rows = first.outerEnd - first.outerBegin;
  // The first byte of the item's band of `view` in `buffer`.
  auto bandStart = [&](const WorkItem &item, const StridedView &view,
                       auto *buffer) {
    return buffer + getBandOffset(item, view) * size;
  };
  const char *start = bandStart(first, first.copy->source, first.source);
  const char *next = start;
  llvm::SmallVector<LineRows, 8> bands;
  for (const WorkItem &item : group) {
    const StridedCopy *copy = item.copy;
    if (!copy || !item.banded || !item.streaming || copy->shape.size() != 2 ||
        item.outerEnd - item.outerBegin != rows ||
        copy->source.strides[0] != first.copy->source.strides[0] ||
        copy->source.strides[1] != 1 || copy->target.strides[1] != 1)
      return false;
    int64_t bytes = copy->shape[1] * size;
    int64_t targetRow = copy->target.strides[0] * size;
    char *dst = bandStart(item, copy->target, item.target);
    // Each band reads on where the one before it stopped.
    if (bandStart(item, copy->source, item.source) != next ||
        bytes % kLineBytes != 0 || targetRow % kLineBytes != 0 ||
        reinterpret_cast<uintptr_t>(dst) % kLineBytes != 0)
      return false;
    bands.push_back({dst, targetRow, next, copy->source.strides[0] * size,
                     bytes / kLineBytes});
    next += bytes;
  }
  if (next - start != bands.front().srcStride)
    return false;
  streamRowsOfLines64Together(bands, rows);
  _mm_sfence(); // Streaming stores are weakly ordered.
  return true;
#else
  (void)group;
  (void)size;
  return false;
#endif
}

/// Runs `work` on the calling thread and on up to `helpers` more threads. A
/// thread that cannot be started (a process at its limit of threads, or of
/// memory for their stacks) leaves its share to the others: the result is
/// the same, only slower. std::thread would abort there, built without
/// exceptions.
void runOnThreads(unsigned helpers, llvm::function_ref<void()> work) {
  auto entry = [](void *argument) -> void * {
    (*static_cast<llvm::function_ref<void()> *>(argument))();
    return nullptr;
  };
  std::vector<pthread_t> started;
  for (unsigned t = 0; t < helpers; ++t) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, entry, &work) != 0)
      break;
    started.push_back(thread);
  }
  work();
  for (pthread_t thread : started)
    pthread_join(thread, nullptr);
}

} // namespace

void ucp::executeOnCpu(const CopyProgram &program,
                       const ProgramBuffers &buffers, DType type,
                       unsigned threads, int64_t bytesPerThread) {
  int64_t size = getElementSize(type);
  std::vector<WorkItem> items;
  // Adds `item` covering `shape`, as bands when it has short runs.
  auto add = [&](WorkItem item, llvm::ArrayRef<int64_t> shape) {
    item.elements = getNumElements(shape).value_or(0);
    if (item.elements == 0)
      return;
    int64_t outer = shape.empty() ? 1 : shape.front();
    item.outerEnd = outer;
    item.banded =
        item.copy && shape.size() >= 2 && shape.back() * size < kShortRunBytes;
    if (!item.banded) {
      items.push_back(item);
      return;
    }
    int64_t band =
        std::max<int64_t>(1, kBandElements / (item.elements / outer));
    for (int64_t begin = 0; begin < outer; begin += band) {
      item.outerBegin = begin;
      item.outerEnd = std::min(outer, begin + band);
      items.push_back(item);
    }
  };
  for (const BufferPairCopies &pair : program.pairs) {
    const char *source =
        static_cast<const char *>(buffers.sources.at(pair.sourceBuffer));
    char *target = static_cast<char *>(buffers.targets.at(pair.targetBuffer));
    for (const StridedCopy &copy : pair.copies) {
      // A scaled copy reads back what it wrote: keep it in the cache.
      bool streaming =
          copy.factor == 1.0 &&
          getNumElements(copy.shape).value_or(0) * size >= kStreamingBytes;
      add({&copy, nullptr, source, target, 0, 0, 0, false, streaming},
          copy.shape);
    }
  }
  for (const StridedFill &fill : program.fills)
    add({nullptr, &fill, nullptr,
         static_cast<char *>(buffers.targets.at(fill.targetBuffer)), 0, 0, 0,
         false, false},
        fill.shape);
  // Whole items largest first, so the tail of the schedule is made of small
  // items; then bands in source order.
  auto sourcePosition = [](const WorkItem &item) {
    return getBandOffset(item, item.copy->source);
  };
  llvm::stable_sort(items, [&](const WorkItem &a, const WorkItem &b) {
    if (a.banded != b.banded)
      return !a.banded;
    if (!a.banded)
      return a.elements > b.elements;
    return std::make_pair(a.source, sourcePosition(a)) <
           std::make_pair(b.source, sourcePosition(b));
  });

  auto run = [&](const WorkItem &item) {
    // The item's band of `view`, whose outermost dimension it narrows.
    auto narrow = [&](StridedView view) {
      view.offset = getBandOffset(item, view);
      return view;
    };
    llvm::ArrayRef<int64_t> whole =
        item.copy ? item.copy->shape : item.fill->shape;
    Extents shape(whole.begin(), whole.end());
    if (!shape.empty())
      shape.front() = item.outerEnd - item.outerBegin;
    if (item.fill) {
      runStrided(shape, nullptr, narrow(item.fill->target), nullptr,
                 item.target, size, 1.0, type, false);
      return;
    }
    StridedView source = narrow(item.copy->source);
    runStrided(shape, &source, narrow(item.copy->target), item.source,
               item.target, size, item.copy->factor, type, item.streaming);
#if defined(__SSE2__)
    if (item.streaming)
      _mm_sfence(); // Streaming stores are weakly ordered.
#endif
  };
  if (threads == 0)
    threads = llvm::hardware_concurrency().compute_thread_count();
  // Threads take groups of items: consecutive bands that read the same
  // source rows (a column split's shards, band by band) go to one thread, so
  // that two threads do not each pull those rows into their own caches
  // (1.2x faster on two threads for 256-byte runs, measured in-process).
  std::vector<size_t> groupStarts;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!groupStarts.empty()) {
      const WorkItem &first = items[groupStarts.back()];
      const WorkItem &item = items[i];
      if (item.banded && first.banded && item.source == first.source &&
          sourcePosition(item) - sourcePosition(first) <
              first.copy->source.strides.front())
        continue;
    }
    groupStarts.push_back(i);
  }
  size_t groups = groupStarts.size();
  groupStarts.push_back(items.size());
  int64_t bytes = 0;
  for (const WorkItem &item : items)
    bytes += item.elements * size;
  threads = std::max<int64_t>(
      1, std::min<int64_t>({threads, static_cast<int64_t>(groups),
                            bytes / std::max<int64_t>(1, bytesPerThread)}));
  std::atomic<size_t> next{0};
  runOnThreads(threads - 1, [&] {
    for (size_t group = next++; group < groups; group = next++) {
      llvm::ArrayRef<WorkItem> members(items.data() + groupStarts[group],
                                       items.data() + groupStarts[group + 1]);
      if (!streamBandsRowByRow(members, size))
        llvm::for_each(members, run);
    }
  });
}

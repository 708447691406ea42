//===- StreamingStores.h - The CPU executor's copy loops -------*- C++ -*-===//
//
// The innermost loops of the CPU executor: streaming (non-temporal) stores
// for large copies, runs batched four at a time, software prefetch for
// strided rows, and the thresholds that choose between them, each with the
// measurement that set it. A private header of CpuExecutor.cpp, its only
// includer: the loops must inline into the executor's.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_ENGINE_STREAMINGSTORES_H
#define UCP_LIB_ENGINE_STREAMINGSTORES_H

#include "ucp/Support/CpuFeatures.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

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

/// ... but only in a run that copies at least this much: a smaller target
/// may still be in the cache from its last use (an allocator hands a freed
/// shard back), and stores that bypass the cache then lose (measured in
/// docs/Execution.md).
constexpr int64_t kStreamingRunBytes = int64_t(1) << 25;

/// Runs at least this long stream 32-byte vectors where the processor can.
constexpr int64_t kWideRunBytes = 4096;

/// Runs of at least kChunksPerBlock * kChunkBytes stream in blocks of
/// kChunksPerBlock chunks, a cache line of each chunk in turn (see
/// streamVectors32).
constexpr int64_t kChunkBytes = 4096;
constexpr int64_t kChunksPerBlock = 4;

#if UCP_HAVE_X86_VECTOR_PATHS
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
  if (bytes >= kWideRunBytes && ucp::hasAvx2())
    width = 32;
#endif
  auto offset = [&](int64_t alignment) {
    return reinterpret_cast<uintptr_t>(dst) % alignment;
  };
#if UCP_HAVE_X86_VECTOR_PATHS
  if (width == 16 && !offset(kLineBytes) && bytes % kLineBytes == 0 &&
      ucp::hasAvx512()) {
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
                    bytes < kChunksPerBlock * kChunkBytes && ucp::hasAvx2();
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

} // namespace

#endif // UCP_LIB_ENGINE_STREAMINGSTORES_H

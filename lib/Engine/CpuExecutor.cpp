//===- CpuExecutor.cpp - Running copy programs on the CPU -----------------===//

#include "ucp/Engine/CpuExecutor.h"
#include "StreamingStores.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/HelperThreads.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Threading.h"

#include <atomic>
#include <cassert>
#include <cstring>

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
  /// What the copy multiplies by: its scale raised to the run's power.
  double factor = 1.0;
};

/// The offset, in elements, at which `item`'s band starts in `view`, a view
/// of its copy or fill.
int64_t getBandOffset(const WorkItem &item, const StridedView &view) {
  return view.strides.empty()
             ? view.offset
             : view.offset + item.outerBegin * view.strides.front();
}

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

/// The work items of `run`: its copies and fills, those with short runs as
/// bands of rows.
std::vector<WorkItem> collectWorkItems(const ProgramRun &run, int64_t size) {
  const CopyProgram &program = *run.program;
  const ProgramBuffers &buffers = run.buffers;
  int64_t copiedBytes = 0;
  for (const BufferPairCopies &pair : program.pairs)
    for (const StridedCopy &copy : pair.copies)
      copiedBytes += getNumElements(copy.shape).value_or(0) * size;
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
      double factor = getCopyFactor(copy.scale, run.scalePower);
      bool streaming =
          factor == 1.0 && copiedBytes >= kStreamingRunBytes &&
          getNumElements(copy.shape).value_or(0) * size >= kStreamingBytes;
      add({&copy, nullptr, source, target, 0, 0, 0, false, streaming, factor},
          copy.shape);
    }
  }
  for (const StridedFill &fill : program.fills)
    add({nullptr, &fill, nullptr,
         static_cast<char *>(buffers.targets.at(fill.targetBuffer)), 0, 0, 0,
         false, false},
        fill.shape);
  return items;
}

} // namespace

llvm::Error CpuExecutor::execute(llvm::ArrayRef<ProgramRun> batch) {
  for (const ProgramRun &run : batch)
    executeOnCpu(run, threads, bytesPerThread);
  return llvm::Error::success();
}

void ucp::executeOnCpu(const ProgramRun &run, unsigned threads,
                       int64_t bytesPerThread) {
  DType type = run.type;
  int64_t size = getElementSize(type);
  std::vector<WorkItem> items = collectWorkItems(run, size);
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

  auto runItem = [&](const WorkItem &item) {
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
               item.target, size, item.factor, type, item.streaming);
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
  runOnHelperThreads(threads - 1, [&] {
    for (size_t group = next++; group < groups; group = next++) {
      llvm::ArrayRef<WorkItem> members(items.data() + groupStarts[group],
                                       items.data() + groupStarts[group + 1]);
      if (!streamBandsRowByRow(members, size))
        llvm::for_each(members, runItem);
    }
  });
}

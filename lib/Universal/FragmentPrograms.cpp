//===- FragmentPrograms.cpp - Copy programs over a checkpoint's fragments -===//

#include "ucp/Universal/FragmentPrograms.h"
#include "ucp/Runtime/FloatBits.h"

#include "llvm/Support/Parallel.h"

#include <cstring>

using namespace ucp;

/// About 16 MiB of fp32 copies per batch.
constexpr int64_t kBatchElements = int64_t(1) << 22;

ProgramBuffers ucp::getFragmentSources(const DeepSpeedCheckpoint &checkpoint,
                                       const DeepSpeedParam &param,
                                       OptimizerState state) {
  ProgramBuffers buffers;
  for (int64_t rank = 0; rank < int64_t(param.slices.size()); ++rank)
    buffers.sources[rank] = checkpoint.getFragment(param, rank, state).data;
  return buffers;
}

CopyProgram ucp::selectTarget(const CopyProgram &whole, int64_t target,
                              int64_t elements, bool withCopies) {
  CopyProgram part;
  part.sourceElements = whole.sourceElements;
  part.targetElements[target] = elements;
  for (const StridedFill &fill : whole.fills)
    if (fill.targetBuffer == target)
      part.fills.push_back(fill);
  if (withCopies)
    for (const BufferPairCopies &pair : whole.pairs)
      if (pair.targetBuffer == target)
        part.pairs.push_back(pair);
  return part;
}

/// Releases the pages of the source view of `copy` (its first element to
/// its last) of rank `rank`'s fragment.
static void releaseSource(const DeepSpeedCheckpoint &checkpoint,
                          const DeepSpeedParam &param, OptimizerState state,
                          int64_t rank, const StridedCopy &copy,
                          const ProgramBuffers &buffers) {
  int64_t last = copy.source.offset;
  for (size_t d = 0; d < copy.shape.size(); ++d)
    last += (copy.shape[d] - 1) * copy.source.strides[d];
  const char *data = static_cast<const char *>(buffers.sources.at(rank));
  checkpoint.releaseFragmentPages(param, rank, state,
                                  data + copy.source.offset * 4,
                                  (last - copy.source.offset + 1) * 4);
}

void ucp::runIntoTarget(const DeepSpeedCheckpoint &checkpoint,
                        const CopyProgram &whole, int64_t target,
                        int64_t elements, const ProgramBuffers &buffers,
                        const DeepSpeedParam *releasing, OptimizerState state) {
  CopyProgram batch = selectTarget(whole, target, elements,
                                   /*withCopies=*/false);
  auto run = [&] {
    executeOnCpu(batch, buffers, DType::F32, /*threads=*/1);
    if (releasing)
      for (const BufferPairCopies &pair : batch.pairs)
        for (const StridedCopy &copy : pair.copies)
          releaseSource(checkpoint, *releasing, state, pair.sourceBuffer, copy,
                        buffers);
    batch.pairs.clear();
    batch.fills.clear();
  };
  int64_t batched = 0;
  for (const BufferPairCopies &pair : whole.pairs) {
    if (pair.targetBuffer != target)
      continue;
    for (const StridedCopy &copy : pair.copies) {
      if (batch.pairs.empty() ||
          batch.pairs.back().sourceBuffer != pair.sourceBuffer)
        batch.pairs.push_back({pair.sourceBuffer, pair.targetBuffer, {}});
      batch.pairs.back().copies.push_back(copy);
      batched += *getNumElements(copy.shape);
      if (batched >= kBatchElements) {
        run();
        batched = 0;
      }
    }
  }
  run();
}

void ucp::narrowFloat32(const float *from, int64_t count, DType type,
                        char *to) {
  if (type == DType::F32) {
    std::memcpy(to, from, count * 4);
    return;
  }
  constexpr int64_t kChunk = int64_t(1) << 20;
  llvm::parallelFor(0, llvm::divideCeil(count, kChunk), [&](size_t c) {
    for (int64_t e = c * kChunk; e < std::min<int64_t>(count, (c + 1) * kChunk);
         ++e) {
      uint16_t bits = type == DType::BF16 ? ucpFloatToBfloat(from[e])
                                          : ucpFloatToHalf(from[e]);
      std::memcpy(to + e * 2, &bits, 2);
    }
  });
}

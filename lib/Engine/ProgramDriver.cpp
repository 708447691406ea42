//===- ProgramDriver.cpp - Copy programs into one target at a time --------===//

#include "ucp/Engine/ProgramDriver.h"
#include "ucp/Map/Indexing.h"

using namespace ucp;

/// About 16 MiB of fp32 copies per batch.
constexpr int64_t kBatchElements = int64_t(1) << 22;

CopyProgram ucp::selectTarget(const CopyProgram &whole, int64_t target,
                              int64_t elements, bool withCopies) {
  CopyProgram part;
  part.sourceElements = whole.sourceElements;
  part.targetElements[target] = elements;
  for (const StridedFill &fill : whole.fills)
    if (fill.targetBuffer == target)
      part.fills.push_back(fill);
  if (withCopies)
    for (const BufferPairCopies *pair : getPairsInto(whole, target))
      part.pairs.push_back(*pair);
  return part;
}

std::optional<std::vector<SourcePiece>>
ucp::getSourcePieces(const ProgramRun &run, int64_t target) {
  auto elements = run.program->targetElements.find(target);
  if (elements == run.program->targetElements.end())
    return std::nullopt;
  std::optional<std::vector<ContiguousRun>> runs = getContiguousRuns(
      selectTarget(*run.program, target, elements->second, true), target);
  if (!runs)
    return std::nullopt;
  int64_t size = getElementSize(run.type);
  std::vector<SourcePiece> pieces;
  for (const ContiguousRun &piece : *runs)
    pieces.push_back({piece.sourceBuffer,
                      {static_cast<const char *>(
                           run.buffers.sources.at(piece.sourceBuffer)) +
                           piece.sourceOffset * size,
                       static_cast<size_t>(piece.elements * size)}});
  return pieces;
}

/// Calls `release` with the source bytes of `copy` (its first element to its
/// last) of source buffer `rank`.
static void releaseSource(const ProgramRun &run, int64_t rank,
                          const StridedCopy &copy, ReleaseSource release) {
  int64_t last = copy.source.offset;
  for (size_t d = 0; d < copy.shape.size(); ++d)
    last += (copy.shape[d] - 1) * copy.source.strides[d];
  int64_t size = getElementSize(run.type);
  release(rank,
          static_cast<const char *>(run.buffers.sources.at(rank)) +
              copy.source.offset * size,
          (last - copy.source.offset + 1) * size);
}

llvm::Error ucp::runIntoTarget(const ProgramRun &run, int64_t target,
                               int64_t elements, Executor &executor,
                               ReleaseSource release) {
  // The fills first, with the first batch of copies.
  CopyProgram batch = selectTarget(*run.program, target, elements,
                                   /*withCopies=*/false);
  ProgramRun part = run;
  part.program = &batch;
  auto flush = [&]() -> llvm::Error {
    if (llvm::Error error = executor.execute(part))
      return error;
    if (release)
      for (const BufferPairCopies &pair : batch.pairs)
        for (const StridedCopy &copy : pair.copies)
          releaseSource(run, pair.sourceBuffer, copy, release);
    batch.pairs.clear();
    batch.fills.clear();
    return llvm::Error::success();
  };
  int64_t batched = 0;
  for (const BufferPairCopies *into : getPairsInto(*run.program, target)) {
    const BufferPairCopies &pair = *into;
    for (const StridedCopy &copy : pair.copies) {
      if (batch.pairs.empty() ||
          batch.pairs.back().sourceBuffer != pair.sourceBuffer)
        batch.pairs.push_back({pair.sourceBuffer, pair.targetBuffer, {}});
      batch.pairs.back().copies.push_back(copy);
      batched += *getNumElements(copy.shape);
      if (batched >= kBatchElements) {
        if (llvm::Error error = flush())
          return error;
        batched = 0;
      }
    }
  }
  return flush();
}

llvm::Error ucp::runIntoTargetAs(ProgramRun run, int64_t target,
                                 int64_t elements, DType type, char *out,
                                 Executor &executor, ReleaseSource release) {
  if (run.type == type) {
    run.buffers.targets[target] = out;
    return runIntoTarget(run, target, elements, executor, release);
  }
  std::vector<char> gathered(elements * getElementSize(run.type));
  run.buffers.targets[target] = gathered.data();
  if (llvm::Error error =
          runIntoTarget(run, target, elements, executor, release))
    return error;
  convertElements(gathered.data(), run.type, out, type, elements);
  return llvm::Error::success();
}

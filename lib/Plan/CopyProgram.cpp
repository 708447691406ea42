//===- CopyProgram.cpp - Plans lowered for execution ----------------------===//

#include "ucp/Plan/CopyProgram.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/SegmentStacking.h"
#include "ucp/Support/Error.h"

#include <algorithm>
#include <cmath>

using namespace ucp;

/// Appends `copy` to `out`, split along its outermost dimension into parts
/// of at most kMaxCopyElements elements (a 1-D copy splits into ranges).
static void appendSplit(const StridedCopy &copy,
                        std::vector<StridedCopy> &out) {
  int64_t elements = getNumElements(copy.shape).value_or(0);
  if (elements <= kMaxCopyElements || copy.shape.empty()) {
    out.push_back(copy);
    return;
  }
  int64_t outer = copy.shape.front();
  int64_t perIndex = elements / outer;
  int64_t step =
      std::max<int64_t>(1, kMaxCopyElements / std::max<int64_t>(perIndex, 1));
  for (int64_t begin = 0; begin < outer; begin += step) {
    StridedCopy part = copy;
    part.shape.front() = std::min(step, outer - begin);
    part.source.offset += begin * copy.source.strides.front();
    part.target.offset += begin * copy.target.strides.front();
    out.push_back(std::move(part));
  }
}

/// Calls `fn` with the blocks of at most kMaxCopyRank dimensions a copy or
/// fill of `shape` over `views` splits into: one per index of its outer
/// dimensions beyond that rank, each with the offset of every view.
static void forEachWithinRank(
    llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<const StridedView *> views,
    llvm::function_ref<void(llvm::ArrayRef<int64_t>, llvm::ArrayRef<int64_t>)>
        fn) {
  llvm::SmallVector<int64_t, 2> offsets;
  for (const StridedView *view : views)
    offsets.push_back(view->offset);
  if (shape.size() <= kMaxCopyRank || llvm::is_contained(shape, 0))
    return fn(shape, offsets);
  size_t outer = shape.size() - kMaxCopyRank;
  Extents index(outer, 0);
  do {
    for (auto [v, view] : llvm::enumerate(views)) {
      offsets[v] = view->offset;
      for (size_t d = 0; d < outer; ++d)
        offsets[v] += index[d] * view->strides[d];
    }
    fn(shape.drop_front(outer), offsets);
  } while (advanceIndex(index, shape.take_front(outer)));
}

double ucp::getCopyFactor(double scale, int scalePower) {
  return scalePower == 1 ? scale : std::pow(scale, scalePower);
}

CopyProgram ucp::lowerPlan(const TransferPlan &plan) {
  CopyProgram program;
  for (const auto &[rank, shape] : plan.sourceShards)
    program.sourceElements[rank] = getNumElements(shape).value_or(0);
  for (const auto &[rank, shape] : plan.targetShards)
    program.targetElements[rank] = getNumElements(shape).value_or(0);

  std::map<std::pair<int64_t, int64_t>, std::vector<StridedCopy>> byPair;
  for (Segment segment : plan.segments) {
    normalizeSegment(segment);
    size_t outer = segment.shape.size() > kMaxCopyRank
                       ? segment.shape.size() - kMaxCopyRank
                       : 0;
    forEachWithinRank(
        segment.shape, {&segment.source, &segment.target},
        [&](llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> offsets) {
          StridedCopy copy{
              Extents(shape.begin(), shape.end()),
              {offsets[0], Extents(segment.source.strides.begin() + outer,
                                   segment.source.strides.end())},
              {offsets[1], Extents(segment.target.strides.begin() + outer,
                                   segment.target.strides.end())},
              segment.scale};
          appendSplit(copy, byPair[{segment.sourceRank, segment.targetRank}]);
        });
  }
  for (auto &[pair, copies] : byPair)
    program.pairs.push_back({pair.first, pair.second, std::move(copies)});
  program.pairsSorted = true; // byPair's order.
  for (const Fill &fill : plan.fills) {
    size_t outer =
        fill.shape.size() > kMaxCopyRank ? fill.shape.size() - kMaxCopyRank : 0;
    forEachWithinRank(
        fill.shape, {&fill.target},
        [&](llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> offsets) {
          program.fills.push_back(
              {fill.rank,
               Extents(shape.begin(), shape.end()),
               {offsets[0], Extents(fill.target.strides.begin() + outer,
                                    fill.target.strides.end())}});
        });
  }
  return program;
}

std::vector<const BufferPairCopies *>
ucp::getPairsInto(const CopyProgram &program, int64_t target) {
  std::vector<const BufferPairCopies *> found;
  if (!program.pairsSorted) {
    for (const BufferPairCopies &pair : program.pairs)
      if (pair.targetBuffer == target)
        found.push_back(&pair);
    return found;
  }
  // Each source's pairs in turn: its run of the list, searched by target.
  auto begin = program.pairs.begin(), end = program.pairs.end();
  while (begin != end) {
    int64_t source = begin->sourceBuffer;
    auto next = std::partition_point(begin, end, [&](const auto &pair) {
      return pair.sourceBuffer == source;
    });
    auto at = std::partition_point(begin, next, [&](const auto &pair) {
      return pair.targetBuffer < target;
    });
    if (at != next && at->targetBuffer == target)
      found.push_back(&*at);
    begin = next;
  }
  return found;
}

CopyProgram ucp::getProgramInto(const CopyProgram &program, int64_t target) {
  CopyProgram into;
  for (const BufferPairCopies *pair : getPairsInto(program, target))
    into.pairs.push_back(*pair);
  into.pairsSorted = program.pairsSorted;
  for (const StridedFill &fill : program.fills)
    if (fill.targetBuffer == target)
      into.fills.push_back(fill);
  into.sourceElements = program.sourceElements;
  if (auto found = program.targetElements.find(target);
      found != program.targetElements.end())
    into.targetElements.insert(*found);
  return into;
}

CopyProgram ucp::raiseScales(const CopyProgram &program, int scalePower) {
  CopyProgram raised = program;
  if (scalePower != 1)
    for (BufferPairCopies &pair : raised.pairs)
      for (StridedCopy &copy : pair.copies)
        copy.scale = getCopyFactor(copy.scale, scalePower);
  return raised;
}

/// Refuses scaled state `name` at `scalePower` (see checkScalePower).
static llvm::Error refuseScaledState(llvm::StringRef name) {
  return makeError("parameter '" + name +
                   "' is scaled, and a scaled optimizer state is refused: "
                   "Adam's lr and eps live in the scaled coordinate, so "
                   "moving the moments alone would change the trajectory "
                   "(spec §2.1); convert the parameter itself (power 1)");
}

llvm::Error ucp::checkScalePower(const TransferPlan &plan, int scalePower) {
  if (scalePower != 1 &&
      llvm::any_of(plan.segments,
                   [](const Segment &segment) { return segment.scale != 1.0; }))
    return refuseScaledState(plan.name);
  return llvm::Error::success();
}

llvm::Error ucp::checkScalePower(const CopyProgram &program,
                                 llvm::StringRef name, int scalePower) {
  if (scalePower == 1)
    return llvm::Error::success();
  for (const BufferPairCopies &pair : program.pairs)
    for (const StridedCopy &copy : pair.copies)
      if (copy.scale != 1.0)
        return refuseScaledState(name);
  return llvm::Error::success();
}

llvm::Error ucp::checkFactors(const CopyProgram &program, DType type,
                              llvm::StringRef name, int scalePower) {
  for (const BufferPairCopies &pair : program.pairs)
    for (const StridedCopy &copy : pair.copies)
      if (double factor = getCopyFactor(copy.scale, scalePower);
          !isRepresentableFactor(type, factor))
        return makeError("parameter '" + name + "': the copy from rank " +
                         std::to_string(pair.sourceBuffer) + " to rank " +
                         std::to_string(pair.targetBuffer) + " scales by " +
                         formatScale(factor) + ", but " +
                         getSafetensorsName(type) +
                         (isFloatingPoint(type)
                              ? " elements take factors of magnitude " +
                                    describeFactorRange(type) + " only"
                              : std::string(" elements cannot be scaled")));
  return llvm::Error::success();
}

TransferPlan ucp::getExecutablePlan(const TransferPlan &plan, int scalePower) {
  CopyProgram program = lowerPlan(plan);
  TransferPlan executable = plan;
  executable.segments.clear();
  for (const BufferPairCopies &pair : program.pairs)
    for (const StridedCopy &copy : pair.copies)
      executable.segments.push_back({copy.shape, pair.sourceBuffer, copy.source,
                                     pair.targetBuffer, copy.target,
                                     getCopyFactor(copy.scale, scalePower)});
  llvm::stable_sort(executable.segments,
                    [](const Segment &a, const Segment &b) {
                      return a.targetRank < b.targetRank;
                    });
  return executable;
}

std::optional<std::vector<ContiguousRun>>
ucp::getContiguousRuns(const CopyProgram &program, int64_t target) {
  if (!program.fills.empty() || program.targetElements.size() != 1 ||
      !program.targetElements.count(target))
    return std::nullopt;
  // (target offset, run)
  std::vector<std::pair<int64_t, ContiguousRun>> runs;
  for (const BufferPairCopies &pair : program.pairs)
    for (const StridedCopy &copy : pair.copies) {
      int64_t elements = 1;
      for (size_t d = 0; d < copy.shape.size(); ++d) {
        // Contiguous: each dimension's stride is the extent of the ones
        // inside it, on both sides (a size-1 dimension has any stride).
        size_t inner = copy.shape.size() - 1 - d;
        if (copy.shape[inner] != 1 && (copy.source.strides[inner] != elements ||
                                       copy.target.strides[inner] != elements))
          return std::nullopt;
        elements *= copy.shape[inner];
      }
      if (copy.scale != 1.0)
        return std::nullopt;
      if (elements > 0)
        runs.push_back({copy.target.offset,
                        {pair.sourceBuffer, copy.source.offset, elements}});
    }
  llvm::sort(runs,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<ContiguousRun> ordered;
  int64_t next = 0;
  for (const auto &[offset, run] : runs) {
    if (offset != next)
      return std::nullopt; // A gap, or an overlap.
    ordered.push_back(run);
    next += run.elements;
  }
  if (next != program.targetElements.at(target))
    return std::nullopt;
  return ordered;
}

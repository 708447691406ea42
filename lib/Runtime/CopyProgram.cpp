//===- CopyProgram.cpp - Plans lowered for execution ----------------------===//

#include "ucp/Runtime/CopyProgram.h"
#include "ucp/Plan/SegmentStacking.h"

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

CopyProgram ucp::lowerPlan(const TransferPlan &plan, int scalePower) {
  CopyProgram program;
  for (const auto &[rank, shape] : plan.sourceShards)
    program.sourceElements[rank] = getNumElements(shape).value_or(0);
  for (const auto &[rank, shape] : plan.targetShards)
    program.targetElements[rank] = getNumElements(shape).value_or(0);

  std::map<std::pair<int64_t, int64_t>, std::vector<StridedCopy>> byPair;
  for (Segment segment : plan.segments) {
    normalizeSegment(segment);
    StridedCopy copy{segment.shape, segment.source, segment.target,
                     std::pow(segment.scale, scalePower)};
    appendSplit(copy, byPair[{segment.sourceRank, segment.targetRank}]);
  }
  for (auto &[pair, copies] : byPair)
    program.pairs.push_back({pair.first, pair.second, std::move(copies)});
  for (const Fill &fill : plan.fills)
    program.fills.push_back({fill.rank, fill.shape, fill.target});
  return program;
}

llvm::Error ucp::checkScalePower(const TransferPlan &plan, int scalePower) {
  if (scalePower == 1)
    return llvm::Error::success();
  for (const Segment &segment : plan.segments)
    if (segment.scale != 1.0)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "parameter '" + plan.name +
              "' is scaled, and a scaled optimizer state is refused: Adam's "
              "lr and eps live in the scaled coordinate, so moving the "
              "moments alone would change the trajectory (spec §2.1); "
              "convert the parameter itself (power 1)");
  return llvm::Error::success();
}

TransferPlan ucp::getExecutablePlan(const TransferPlan &plan, int scalePower) {
  CopyProgram program = lowerPlan(plan, scalePower);
  TransferPlan executable = plan;
  executable.segments.clear();
  for (const BufferPairCopies &pair : program.pairs)
    for (const StridedCopy &copy : pair.copies)
      executable.segments.push_back({copy.shape, pair.sourceBuffer, copy.source,
                                     pair.targetBuffer, copy.target,
                                     copy.factor});
  llvm::stable_sort(executable.segments,
                    [](const Segment &a, const Segment &b) {
                      return a.targetRank < b.targetRank;
                    });
  return executable;
}

ParamMap ucp::getFullTensorMap(const ParamMap &map) {
  ParamMap full;
  full.name = map.name;
  full.logicalShape = map.logicalShape;
  if (map.originalVocabSize && !full.logicalShape.empty())
    full.logicalShape[0] = *map.originalVocabSize;
  full.worldSize = 1;
  Shard &shard = full.shards.emplace_back();
  shard.rank = 0;
  shard.shape = full.logicalShape;
  if (getNumElements(full.logicalShape).value_or(0) > 0) {
    Extents strides = getRowMajorStrides(full.logicalShape);
    shard.pieces.push_back(
        {full.logicalShape, {0, strides}, {0, strides}, {0}, 1.0});
  }
  return full;
}

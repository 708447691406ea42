//===- Compose.cpp - M_t o M_s^-1 without materialising F -----------------===//

#include "ucp/Plan/Compose.h"
#include "ucp/Analysis/BoxSweep.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/SegmentStacking.h"
#include "ucp/Support/Error.h"

using namespace ucp;
using llvm::ArrayRef;

namespace {

/// A canonical source piece: a box of F, where its lo corner sits in its
/// rank's shard and the shard strides per F dimension.
struct SourceBlock {
  Box box;
  int64_t rank;
  StridedView dest;
  double scale;
};

/// Returns where `at` (a multi-index of F inside the box starting at `lo`)
/// sits in the shard, given the view of the box's corner.
int64_t offsetAt(const StridedView &view, ArrayRef<int64_t> lo,
                 ArrayRef<int64_t> at) {
  int64_t offset = view.offset;
  for (size_t d = 0; d < lo.size(); ++d)
    offset += (at[d] - lo[d]) * view.strides[d];
  return offset;
}

/// Builds the plan of one target shard.
class TargetShardPlanner {
public:
  TargetShardPlanner(const Shard &shard, ArrayRef<SourceBlock> sources,
                     const ReplicaPolicy &policy, SentElements &sent)
      : shard(shard), sources(sources), policy(policy), sent(sent) {}

  /// Plans the target piece covering `box` of F (its first rows up to
  /// `validRows` along dimension 0 have a source; the rest is filled);
  /// `candidates` (ascending) index the sources that may meet it.
  void planPiece(const Piece &piece, const Box &box,
                 std::optional<int64_t> validRows,
                 ArrayRef<unsigned> candidates);

  /// Folds what was planned and appends it to `plan`.
  void finish(TransferPlan &plan);

private:
  void addCopy(const Piece &piece, const Box &pieceBox, const Box &cell,
               const SourceBlock &source);
  void addFill(const Piece &piece, const Box &pieceBox, const Box &cell);
  const SourceBlock &choose(ArrayRef<const SourceBlock *> owners);
  /// Who the Balance policy counts a send from source rank `rank` against:
  /// the rank, or its process in a distributed transfer.
  int64_t getSender(int64_t rank) const {
    return policy.isDistributed() ? policy.getSourceProcess(rank) : rank;
  }

  const Shard &shard;
  ArrayRef<SourceBlock> sources;
  const ReplicaPolicy &policy;
  SentElements &sent;
  LabelTable labels;
  std::vector<FoldBlock> copies, fills;
};

/// Returns, for each of `pieces` (boxes of F of `shape`), the indices of the
/// `sources` it meets, ascending. One sweep over both sets finds every
/// meeting at once: testing each pair would cost the product of the two
/// counts, a second for a few thousand ranks.
std::vector<llvm::SmallVector<unsigned, 4>>
findMeetingSources(ArrayRef<SourceBlock> sources, ArrayRef<Box> pieces,
                   ArrayRef<int64_t> shape) {
  std::vector<Box> boxes;
  boxes.reserve(sources.size() + pieces.size());
  for (const SourceBlock &source : sources)
    boxes.push_back(source.box);
  boxes.insert(boxes.end(), pieces.begin(), pieces.end());
  unsigned firstPiece = sources.size();
  std::vector<llvm::SmallVector<unsigned, 4>> meeting(pieces.size());
  sweepBoxes(boxes, shape, [&](const Box &, ArrayRef<unsigned> owners) {
    // Owners ascend: the sources come first.
    auto piecesBegin = llvm::lower_bound(owners, firstPiece);
    for (auto piece = piecesBegin; piece != owners.end(); ++piece)
      meeting[*piece - firstPiece].append(owners.begin(), piecesBegin);
  });
  for (llvm::SmallVector<unsigned, 4> &list : meeting) {
    llvm::sort(list);
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return meeting;
}

} // namespace

const SourceBlock &
TargetShardPlanner::choose(ArrayRef<const SourceBlock *> owners) {
  auto lowest = [&](auto accept) -> const SourceBlock * {
    const SourceBlock *best = nullptr;
    for (const SourceBlock *owner : owners)
      if (accept(*owner) && (!best || owner->rank < best->rank))
        best = owner;
    return best;
  };
  auto any = [](const SourceBlock &) { return true; };
  // Local: the target's own rank, or its own process in a distributed
  // transfer.
  auto isLocal = [&](const SourceBlock &b) {
    return policy.isDistributed() ? policy.getSourceProcess(b.rank) ==
                                        policy.getTargetProcess(shard.rank)
                                  : b.rank == shard.rank;
  };
  switch (policy.kind) {
  case ReplicaPolicy::Lowest:
    return *lowest(any);
  case ReplicaPolicy::Local:
  case ReplicaPolicy::Node: {
    if (const SourceBlock *local = lowest(isLocal))
      return *local;
    if (policy.kind == ReplicaPolicy::Node && policy.ranksPerNode > 0) {
      int64_t node = shard.rank / policy.ranksPerNode;
      if (const SourceBlock *near = lowest([&](const SourceBlock &b) {
            return b.rank / policy.ranksPerNode == node;
          }))
        return *near;
    }
    return *lowest(any);
  }
  case ReplicaPolicy::Balance: {
    // Across processes only what leaves a process costs: a holder in the
    // target's process wins, else the process that has sent the least.
    if (policy.isDistributed())
      if (const SourceBlock *local = lowest(isLocal))
        return *local;
    const SourceBlock *best = owners.front();
    for (const SourceBlock *owner : owners) {
      auto key = [&](const SourceBlock *b) {
        return std::make_pair(sent[getSender(b->rank)], b->rank);
      };
      if (key(owner) < key(best))
        best = owner;
    }
    return *best;
  }
  }
  llvm_unreachable("unknown replica policy");
}

void TargetShardPlanner::addCopy(const Piece &piece, const Box &pieceBox,
                                 const Box &cell, const SourceBlock &source) {
  Extents shape;
  for (size_t d = 0; d < cell.lo.size(); ++d)
    shape.push_back(cell.hi[d] - cell.lo[d]);
  StridedView target{offsetAt(piece.dest, pieceBox.lo, cell.lo),
                     piece.dest.strides};
  StridedView from{offsetAt(source.dest, source.box.lo, cell.lo),
                   source.dest.strides};
  // Re-express the cell in the target shard, where it folds with cells
  // from the same source rank and scale.
  llvm::SmallVector<MappedBox> mapped;
  decomposeMappedView(shape, target, from, shard.shape, Repeats::Enumerate,
                      mapped);
  unsigned label = labels.intern({source.rank}, piece.scale / source.scale);
  for (MappedBox &box : mapped)
    copies.push_back({std::move(box), label});
  if (!policy.isDistributed() || policy.getSourceProcess(source.rank) !=
                                     policy.getTargetProcess(shard.rank))
    sent[getSender(source.rank)] += cell.getNumElements();
}

void TargetShardPlanner::addFill(const Piece &piece, const Box &pieceBox,
                                 const Box &cell) {
  Extents shape;
  for (size_t d = 0; d < cell.lo.size(); ++d)
    shape.push_back(cell.hi[d] - cell.lo[d]);
  StridedView target{offsetAt(piece.dest, pieceBox.lo, cell.lo),
                     piece.dest.strides};
  // A fill maps onto itself, so that neighbouring fills fold like copies.
  llvm::SmallVector<MappedBox> mapped;
  decomposeMappedView(shape, target, target, shard.shape, Repeats::Enumerate,
                      mapped);
  for (MappedBox &box : mapped)
    fills.push_back({std::move(box), 0});
}

void TargetShardPlanner::planPiece(const Piece &piece, const Box &box,
                                   std::optional<int64_t> validRows,
                                   ArrayRef<unsigned> candidates) {
  Box copyBox = box;
  if (validRows && !box.lo.empty() && box.hi[0] > *validRows) {
    Box padding = box;
    padding.lo[0] = std::max(box.lo[0], *validRows);
    addFill(piece, box, padding);
    copyBox.hi[0] = padding.lo[0];
  }
  if (copyBox.getNumElements() <= 0)
    return;

  // Sweep the sources over the piece, in coordinates relative to it.
  std::vector<Box> relative;
  std::vector<const SourceBlock *> owners;
  for (unsigned candidate : candidates) {
    const SourceBlock &source = sources[candidate];
    Box clipped = copyBox;
    bool meets = true;
    for (size_t d = 0; d < clipped.lo.size(); ++d) {
      clipped.lo[d] = std::max(copyBox.lo[d], source.box.lo[d]) - copyBox.lo[d];
      clipped.hi[d] = std::min(copyBox.hi[d], source.box.hi[d]) - copyBox.lo[d];
      meets &= clipped.lo[d] < clipped.hi[d];
    }
    if (!meets)
      continue;
    relative.push_back(std::move(clipped));
    owners.push_back(&source);
  }
  Extents extents;
  for (size_t d = 0; d < copyBox.lo.size(); ++d)
    extents.push_back(copyBox.hi[d] - copyBox.lo[d]);
  llvm::SmallVector<const SourceBlock *, 8> cellOwners;
  sweepBoxes(relative, extents, [&](const Box &cell, ArrayRef<unsigned> ids) {
    Box absolute = cell;
    for (size_t d = 0; d < absolute.lo.size(); ++d) {
      absolute.lo[d] += copyBox.lo[d];
      absolute.hi[d] += copyBox.lo[d];
    }
    if (ids.empty())
      return addFill(piece, box, absolute);
    cellOwners.clear();
    for (unsigned id : ids)
      cellOwners.push_back(owners[id]);
    addCopy(piece, box, absolute, choose(cellOwners));
  });
}

void TargetShardPlanner::finish(TransferPlan &plan) {
  Extents strides = getRowMajorStrides(shard.shape);
  auto targetView = [&](const Box &box) {
    int64_t offset = 0;
    for (size_t d = 0; d < box.lo.size(); ++d)
      offset += box.lo[d] * strides[d];
    return StridedView{offset, strides};
  };
  auto shapeOf = [](const Box &box) {
    Extents shape;
    for (size_t d = 0; d < box.lo.size(); ++d)
      shape.push_back(box.hi[d] - box.lo[d]);
    return shape;
  };
  std::vector<Segment> segments;
  for (const FoldBlock &block : foldBlocks(std::move(copies))) {
    Segment &segment = segments.emplace_back();
    segment.shape = shapeOf(block.mapped.box);
    segment.sourceRank = labels.getLocations(block.label).front();
    segment.source = {
        block.mapped.otherOffset,
        getCanonicalStrides(block.mapped.box, block.mapped.otherStrides)};
    segment.targetRank = shard.rank;
    segment.target = targetView(block.mapped.box);
    segment.scale = labels.getScale(block.label);
  }
  stackSegments(segments);
  plan.segments.insert(plan.segments.end(), segments.begin(), segments.end());

  // Fills stack like copies of the target onto itself.
  std::vector<Segment> fillCopies;
  for (const FoldBlock &block : foldBlocks(std::move(fills))) {
    StridedView view = targetView(block.mapped.box);
    fillCopies.push_back(
        {shapeOf(block.mapped.box), shard.rank, view, shard.rank, view, 1.0});
  }
  stackSegments(fillCopies);
  for (const Segment &fill : fillCopies)
    plan.fills.push_back({shard.rank, fill.shape, fill.target});
}

llvm::Expected<TransferPlan> ucp::composeMaps(const ParamMap &source,
                                              const ParamMap &target,
                                              const ReplicaPolicy &policy,
                                              SentElements &sent) {
  auto refuse = [&](const llvm::Twine &why) {
    return makeError("parameter '" + source.name + "': " + why.str());
  };
  // The rows both sides hold for real: all of F, or [0, V) of a padded
  // vocabulary.
  std::optional<int64_t> validRows = source.originalVocabSize;
  if (target.originalVocabSize) {
    if (validRows && *validRows != *target.originalVocabSize)
      return refuse("the source has " + std::to_string(*validRows) +
                    " vocabulary rows but the target " +
                    std::to_string(*target.originalVocabSize));
    validRows = target.originalVocabSize;
  }
  bool sameShape = source.logicalShape == target.logicalShape;
  bool sameRows = validRows &&
                  source.logicalShape.size() == target.logicalShape.size() &&
                  !source.logicalShape.empty() &&
                  ArrayRef<int64_t>(source.logicalShape).drop_front() ==
                      ArrayRef<int64_t>(target.logicalShape).drop_front() &&
                  source.logicalShape[0] >= *validRows &&
                  target.logicalShape[0] >= *validRows;
  if (!sameShape && !sameRows)
    return refuse(
        "the source's logical shape " + formatList(source.logicalShape) +
        " differs from the target's " + formatList(target.logicalShape));

  llvm::Expected<ParamMap> canonicalSource = canonicalizeParamMap(source);
  if (!canonicalSource)
    return canonicalSource.takeError();
  llvm::Expected<ParamMap> canonicalTarget = canonicalizeParamMap(target);
  if (!canonicalTarget)
    return canonicalTarget.takeError();

  TransferPlan plan;
  plan.name = source.name;
  plan.sourceWorld = source.worldSize;
  plan.targetWorld = target.worldSize;
  std::vector<SourceBlock> sources;
  for (const Shard &shard : canonicalSource->shards) {
    plan.sourceShards[shard.rank] = shard.shape;
    for (const Piece &piece : shard.pieces) {
      Box box = getCanonicalPieceBox(piece, source.logicalShape);
      if (validRows && !box.lo.empty())
        box.hi[0] = std::min(box.hi[0], *validRows); // Never read padding.
      if (box.getNumElements() > 0)
        sources.push_back({box, shard.rank, piece.dest, piece.scale});
    }
  }
  std::vector<Box> targetBoxes;
  for (const Shard &shard : canonicalTarget->shards)
    for (const Piece &piece : shard.pieces)
      targetBoxes.push_back(getCanonicalPieceBox(piece, target.logicalShape));
  std::vector<llvm::SmallVector<unsigned, 4>> meeting =
      findMeetingSources(sources, targetBoxes, target.logicalShape);
  size_t next = 0;
  for (const Shard &shard : canonicalTarget->shards) {
    plan.targetShards[shard.rank] = shard.shape;
    TargetShardPlanner planner(shard, sources, policy, sent);
    for (const Piece &piece : shard.pieces) {
      planner.planPiece(piece, targetBoxes[next], validRows, meeting[next]);
      ++next;
    }
    planner.finish(plan);
  }
  auto byTarget = [](const auto &a, const auto &b) {
    return std::make_pair(a.targetRank, a.target.offset) <
           std::make_pair(b.targetRank, b.target.offset);
  };
  llvm::stable_sort(plan.segments, byTarget);
  llvm::stable_sort(plan.fills, [](const Fill &a, const Fill &b) {
    return std::make_pair(a.rank, a.target.offset) <
           std::make_pair(b.rank, b.target.offset);
  });
  return plan;
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

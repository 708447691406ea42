//===- NestedLayout.cpp - Shards sharded again ----------------------------===//
//
// Per outer shard S, the outer pieces (boxes of S mapped to F) and the inner
// pieces (boxes of S mapped to inner shards) are swept together over S:
// every cell lies in one outer box and in the inner boxes that take it, and
// becomes a piece of each of those inner shards, its source read through
// the outer box. Locations are then derived over the whole grid.
//
//===----------------------------------------------------------------------===//

#include "ucp/Layout/NestedLayout.h"
#include "ucp/Analysis/BoxDecomposition.h"
#include "ucp/Analysis/BoxSweep.h"
#include "ucp/Canonical/LocationAssignment.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/MathExtras.h"

#include <map>

using namespace ucp;
using llvm::Expected;

static llvm::Error refuse(const ParamMap &map, const llvm::Twine &why) {
  return makeError("parameter '" + map.name + "': " + why.str());
}

/// Returns where `box`'s mapping puts the element `at` (inside the box).
static StridedView mapAt(const MappedBox &box, llvm::ArrayRef<int64_t> at) {
  StridedView view{box.otherOffset, box.otherStrides};
  for (size_t d = 0; d < at.size(); ++d) {
    if (view.strides[d] == kAnyStride) {
      view.strides[d] = 0; // An extent of 1: no element steps along it.
      continue;
    }
    view.offset += (at[d] - box.box.lo[d]) * view.strides[d];
  }
  return view;
}

namespace {
/// The boxes of one outer shard, outer ones first.
struct ShardBoxes {
  llvm::SmallVector<MappedBox> boxes;
  size_t outerCount = 0;
  /// For each inner box: the inner rank and the scale of its piece.
  std::vector<std::pair<int64_t, double>> innerOwners;
  /// For each outer box: the scale of its piece.
  std::vector<double> outerScales;
};
} // namespace

/// Collects the boxes of outer shard `shard` and of its inner map.
static Expected<ShardBoxes>
collectBoxes(const ParamMap &outer, const Shard &shard, const ParamMap &inner) {
  ShardBoxes result;
  auto tooMany = [&] {
    return refuse(outer, "rank " + std::to_string(shard.rank) +
                             ": a piece decomposes into more than " +
                             std::to_string(kMaxBoxesPerView) + " boxes");
  };
  for (const Piece &piece : shard.pieces) {
    if (!decomposeMappedView(piece.shape, piece.dest, piece.source, shard.shape,
                             Repeats::Enumerate, result.boxes))
      return tooMany();
    result.outerScales.resize(result.boxes.size(), piece.scale);
  }
  result.outerCount = result.boxes.size();
  for (const Shard &innerShard : inner.shards)
    for (const Piece &piece : innerShard.pieces) {
      if (!decomposeMappedView(piece.shape, piece.source, piece.dest,
                               shard.shape, Repeats::Enumerate, result.boxes))
        return tooMany();
      result.innerOwners.resize(result.boxes.size() - result.outerCount,
                                {innerShard.rank, piece.scale});
    }
  return result;
}

Expected<ParamMap> ucp::nestShardMaps(const ParamMap &outer,
                                      llvm::ArrayRef<ParamMap> inner) {
  if (static_cast<int64_t>(inner.size()) != outer.worldSize)
    return refuse(outer, std::to_string(inner.size()) + " inner maps for " +
                             std::to_string(outer.worldSize) + " ranks");
  int64_t innerWorld = inner.empty() ? 1 : inner.front().worldSize;
  int64_t world = 0;
  if (llvm::MulOverflow(outer.worldSize, innerWorld, world) ||
      !checkWorldSize(world).empty())
    return refuse(outer, "a grid of " + std::to_string(outer.worldSize) +
                             " x " + std::to_string(innerWorld) +
                             " ranks is more than " +
                             std::to_string(kMaxWorldSize));
  ParamMap result{
      outer.name, outer.logicalShape, world, {}, outer.originalVocabSize};
  for (const Shard &shard : outer.shards) {
    const ParamMap &nested = inner[shard.rank];
    if (nested.worldSize != innerWorld || nested.logicalShape != shard.shape)
      return refuse(outer,
                    "the inner map of rank " + std::to_string(shard.rank) +
                        " is over " + formatList(nested.logicalShape) + " on " +
                        std::to_string(nested.worldSize) +
                        " ranks, not the shard's " + formatList(shard.shape) +
                        " on " + std::to_string(innerWorld));
    Expected<ShardBoxes> boxes = collectBoxes(outer, shard, nested);
    if (!boxes)
      return boxes.takeError();
    // The grid's shards of this outer rank, by inner rank.
    std::map<int64_t, Shard> shards;
    for (const Shard &innerShard : nested.shards)
      shards[innerShard.rank] = {
          innerShard.rank * outer.worldSize + shard.rank, innerShard.shape, {}};
    std::vector<Box> cells;
    for (const MappedBox &box : boxes->boxes)
      cells.push_back(box.box);
    std::optional<Extents> unfilled;
    sweepBoxes(cells, shard.shape,
               [&](const Box &cell, llvm::ArrayRef<unsigned> owners) {
                 // Owners ascend: the outer box, if any, comes first.
                 bool filled = owners.front() < boxes->outerCount;
                 for (unsigned owner : owners) {
                   if (owner < boxes->outerCount)
                     continue;
                   if (!filled) {
                     unfilled = cell.lo;
                     return;
                   }
                   auto [rank, scale] =
                       boxes->innerOwners[owner - boxes->outerCount];
                   const MappedBox &from = boxes->boxes[owners.front()];
                   const MappedBox &to = boxes->boxes[owner];
                   Extents extents(cell.hi);
                   for (size_t d = 0; d < extents.size(); ++d)
                     extents[d] -= cell.lo[d];
                   shards[rank].pieces.push_back(
                       {extents,
                        mapAt(from, cell.lo),
                        mapAt(to, cell.lo),
                        {shards[rank].rank},
                        scale * boxes->outerScales[owners.front()]});
                 }
               });
    if (unfilled)
      return refuse(outer, "rank " + std::to_string(shard.rank) +
                               ": an inner shard takes element " +
                               formatList(*unfilled) +
                               " of the shard, which no piece fills");
    for (auto &entry : shards)
      result.shards.push_back(std::move(entry.second));
  }
  return assignLocations(result);
}

Expected<ParamMap> ucp::buildFlatRangeLayout(llvm::StringRef name,
                                             llvm::ArrayRef<int64_t> shape,
                                             llvm::ArrayRef<int64_t> sizes) {
  std::optional<int64_t> elements = getNumElements(shape);
  ParamMap map{name.str(),
               Extents(shape),
               static_cast<int64_t>(sizes.size()),
               {},
               std::nullopt};
  int64_t start = 0;
  for (auto [rank, size] : llvm::enumerate(sizes)) {
    if (size < 0 || !elements || size > *elements - start)
      return refuse(map, "fragments " + formatList(sizes) +
                             " do not fit a shard of " + formatList(shape));
    Shard shard{static_cast<int64_t>(rank), {size}, {}};
    if (size > 0)
      shard.pieces.push_back(
          {{size}, {start, {1}}, {0, {1}}, {static_cast<int64_t>(rank)}, 1.0});
    map.shards.push_back(std::move(shard));
    start += size;
  }
  if (start != *elements)
    return refuse(map, "fragments " + formatList(sizes) + " hold " +
                           std::to_string(start) + " of the " +
                           std::to_string(*elements) + " elements of " +
                           formatList(shape));
  return map;
}

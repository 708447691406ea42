//===- LocationAssignment.cpp - Locations derived from the pieces ---------===//
//
// Every piece's source is decomposed into boxes of F, and one sweep of F
// over all of them yields cells, each with the boxes covering it: the
// holders of a cell with one scale are its locations. Each box's cells are
// then folded back into canonical pieces per shard.
//
//===----------------------------------------------------------------------===//

#include "ucp/Canonical/LocationAssignment.h"
#include "ucp/Analysis/BoxSweep.h"
#include "ucp/Canonical/Canonicalize.h"

using namespace ucp;

namespace {
/// A box of F a shard holds: where its elements sit there, at which scale.
struct HeldBox {
  MappedBox mapped;
  size_t shard;
  double scale;
};
} // namespace

/// Returns the part of `held` on `cell` (a box inside it).
static MappedBox restrictTo(const MappedBox &held, const Box &cell) {
  MappedBox part{cell, held.otherOffset, held.otherStrides};
  for (size_t d = 0; d < cell.lo.size(); ++d)
    if (cell.lo[d] != held.box.lo[d])
      part.otherOffset += (cell.lo[d] - held.box.lo[d]) * held.otherStrides[d];
  return part;
}

llvm::Expected<ParamMap> ucp::assignLocations(const ParamMap &map) {
  std::vector<HeldBox> held;
  for (auto [shardIndex, shard] : llvm::enumerate(map.shards))
    for (size_t piece = 0; piece < shard.pieces.size(); ++piece) {
      llvm::Expected<llvm::SmallVector<MappedBox>> boxes =
          decomposePieceSource(map, shard, piece);
      if (!boxes)
        return boxes.takeError();
      for (MappedBox &box : *boxes)
        held.push_back({std::move(box), shardIndex, shard.pieces[piece].scale});
    }
  std::vector<Box> boxes;
  boxes.reserve(held.size());
  for (const HeldBox &box : held)
    boxes.push_back(box.mapped.box);

  std::vector<LabelTable> labels(map.shards.size());
  std::vector<std::vector<FoldBlock>> blocks(map.shards.size());
  llvm::SmallVector<int64_t, 8> locations;
  sweepBoxes(
      boxes, map.logicalShape,
      [&](const Box &cell, llvm::ArrayRef<unsigned> owners) {
        for (unsigned owner : owners) {
          const HeldBox &box = held[owner];
          locations.clear();
          for (unsigned other : owners)
            if (held[other].scale == box.scale)
              locations.push_back(map.shards[held[other].shard].rank);
          llvm::sort(locations);
          locations.erase(std::unique(locations.begin(), locations.end()),
                          locations.end());
          unsigned label = labels[box.shard].intern(locations, box.scale);
          blocks[box.shard].push_back({restrictTo(box.mapped, cell), label});
        }
      });

  ParamMap result = map;
  for (auto [index, shard] : llvm::enumerate(result.shards))
    shard.pieces = buildCanonicalPieces(std::move(blocks[index]), labels[index],
                                        map.logicalShape);
  llvm::stable_sort(result.shards, [](const Shard &a, const Shard &b) {
    return a.rank < b.rank;
  });
  return result;
}

//===- Canonicalize.cpp - The canonical form of parameter maps ------------===//

#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

using namespace ucp;
using llvm::ArrayRef;

unsigned LabelTable::intern(ArrayRef<int64_t> locations, double scale) {
  Label label{std::vector<int64_t>(locations.begin(), locations.end()), scale};
  auto [it, inserted] = ids.try_emplace(label, labels.size());
  if (inserted)
    labels.push_back(std::move(label));
  return it->second;
}

std::vector<Piece> ucp::buildCanonicalPieces(std::vector<FoldBlock> blocks,
                                             const LabelTable &labels,
                                             ArrayRef<int64_t> logicalShape) {
  Extents fStrides = getRowMajorStrides(logicalShape);
  std::vector<Piece> pieces;
  for (const FoldBlock &block : foldBlocks(std::move(blocks))) {
    const Box &box = block.mapped.box;
    Piece &piece = pieces.emplace_back();
    piece.source.offset = 0;
    for (size_t d = 0; d < box.lo.size(); ++d) {
      piece.shape.push_back(box.hi[d] - box.lo[d]);
      piece.source.offset += box.lo[d] * fStrides[d];
    }
    piece.source.strides = fStrides;
    piece.dest.offset = block.mapped.otherOffset;
    piece.dest.strides = getCanonicalStrides(box, block.mapped.otherStrides);
    ArrayRef<int64_t> locations = labels.getLocations(block.label);
    piece.locations.assign(locations.begin(), locations.end());
    piece.scale = labels.getScale(block.label);
  }
  llvm::sort(pieces, [](const Piece &a, const Piece &b) {
    return std::make_pair(a.dest.offset, a.source.offset) <
           std::make_pair(b.dest.offset, b.source.offset);
  });
  return pieces;
}

Box ucp::getCanonicalPieceBox(const Piece &piece,
                              ArrayRef<int64_t> logicalShape) {
  Box box{unravelIndex(piece.source.offset, logicalShape), {}};
  box.hi = box.lo;
  for (size_t d = 0; d < box.hi.size(); ++d)
    box.hi[d] += piece.shape[d];
  return box;
}

llvm::Expected<llvm::SmallVector<MappedBox>>
ucp::decomposePieceSource(const ParamMap &map, const Shard &shard,
                          size_t index) {
  const Piece &piece = shard.pieces[index];
  llvm::SmallVector<MappedBox> mapped;
  if (!decomposeMappedView(piece.shape, piece.source, piece.dest,
                           map.logicalShape, Repeats::Enumerate, mapped))
    return makeError("parameter '" + map.name + "': rank " +
                     std::to_string(shard.rank) + " piece #" +
                     std::to_string(index) +
                     ": its source view decomposes into more than " +
                     std::to_string(kMaxBoxesPerView) + " boxes of F");
  return mapped;
}

llvm::Expected<ParamMap> ucp::canonicalizeParamMap(const ParamMap &map) {
  ParamMap result = map;
  // The data model keeps shards in ascending rank order; a map built or
  // written otherwise is sorted here.
  llvm::stable_sort(result.shards, [](const Shard &a, const Shard &b) {
    return a.rank < b.rank;
  });
  for (Shard &shard : result.shards) {
    LabelTable labels;
    std::vector<FoldBlock> blocks;
    for (auto [index, piece] : llvm::enumerate(shard.pieces)) {
      llvm::Expected<llvm::SmallVector<MappedBox>> mapped =
          decomposePieceSource(map, shard, index);
      if (!mapped)
        return mapped.takeError();
      unsigned label = labels.intern(piece.locations, piece.scale);
      for (MappedBox &box : *mapped)
        blocks.push_back({std::move(box), label});
    }
    shard.pieces =
        buildCanonicalPieces(std::move(blocks), labels, map.logicalShape);
  }
  return result;
}

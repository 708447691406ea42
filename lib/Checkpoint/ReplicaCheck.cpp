//===- ReplicaCheck.cpp - P2: replicas hold identical data ----------------===//

#include "ucp/Analysis/BoxSweep.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include <cstring>

using namespace ucp;

llvm::Expected<std::optional<ReplicaMismatch>>
ucp::findReplicaMismatch(const ParamMap &map,
                         const std::map<int64_t, const char *> &shards,
                         int64_t elementSize) {
  llvm::Expected<ParamMap> canonical = canonicalizeParamMap(map);
  if (!canonical)
    return canonical.takeError();
  // Every canonical piece as a box of F with its rank and shard view.
  struct Holder {
    int64_t rank;
    Extents lo;
    StridedView view;
  };
  std::vector<Box> boxes;
  std::vector<Holder> holders;
  for (const Shard &shard : canonical->shards) {
    for (const Piece &piece : shard.pieces) {
      Box box = getCanonicalPieceBox(piece, map.logicalShape);
      boxes.push_back(box);
      holders.push_back({shard.rank, box.lo, piece.dest});
    }
  }
  std::optional<ReplicaMismatch> mismatch;
  sweepBoxes(boxes, map.logicalShape,
             [&](const Box &cell, llvm::ArrayRef<unsigned> owners) {
               if (mismatch || owners.size() < 2)
                 return;
               Extents shape;
               for (size_t d = 0; d < cell.lo.size(); ++d)
                 shape.push_back(cell.hi[d] - cell.lo[d]);
               // The view of each holder at the cell's corner.
               std::vector<StridedView> views;
               for (unsigned owner : owners) {
                 const Holder &h = holders[owner];
                 StridedView view = h.view;
                 for (size_t d = 0; d < cell.lo.size(); ++d)
                   view.offset += (cell.lo[d] - h.lo[d]) * h.view.strides[d];
                 views.push_back(view);
               }
               int64_t flat = 0;
               forEachElement(shape, views, [&](llvm::ArrayRef<int64_t> at) {
                 if (mismatch)
                   return;
                 const char *first =
                     shards.at(holders[owners[0]].rank) + at[0] * elementSize;
                 for (size_t i = 1; i < owners.size(); ++i) {
                   const char *other =
                       shards.at(holders[owners[i]].rank) + at[i] * elementSize;
                   if (std::memcmp(first, other, elementSize) != 0) {
                     Extents element = unravelIndex(flat, shape);
                     for (size_t d = 0; d < element.size(); ++d)
                       element[d] += cell.lo[d];
                     mismatch = ReplicaMismatch{holders[owners[0]].rank,
                                                holders[owners[i]].rank,
                                                std::move(element)};
                     return;
                   }
                 }
                 ++flat;
               });
             });
  return mismatch;
}

llvm::Error ucp::checkReplicas(const ParamMap &map,
                               const std::map<int64_t, const char *> &shards,
                               int64_t elementSize) {
  llvm::Expected<std::optional<ReplicaMismatch>> mismatch =
      findReplicaMismatch(map, shards, elementSize);
  if (!mismatch)
    return mismatch.takeError();
  if (!*mismatch)
    return llvm::Error::success();
  return makeError("parameter '" + map.name + "': ranks " +
                   std::to_string((*mismatch)->first) + " and " +
                   std::to_string((*mismatch)->second) +
                   " hold different data for replicated element " +
                   formatList((*mismatch)->element) + " of F (P2)");
}

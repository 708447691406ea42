//===- WalkingVerifier.cpp - The verifier's element-walk oracle -----------===//

#include "WalkingVerifier.h"
#include "ucp/Analysis/ElementClassifier.h"
#include "ucp/Map/Indexing.h"

#include "llvm/Support/ErrorHandling.h"

using namespace ucp;
using llvm::ArrayRef;

VerifyReport ucp::testing::verifyParamMapByWalking(const ParamMap &map) {
  if (map.worldSize > 64)
    llvm::report_fatal_error("the element walk tracks at most 64 ranks");
  ElementClassifier classifier(map);
  constexpr uint32_t kNone = ~uint32_t(0);
  llvm::SmallVector<PieceRef> refs = getAllPieces(map);

  // F: the first holder, the first later holders with other locations and
  // with another scale, and the ranks holding each element.
  int64_t elements = getNumElements(map.logicalShape).value_or(0);
  std::vector<uint32_t> first(elements, kNone), otherLocations(elements, kNone),
      otherScale(elements, kNone);
  std::vector<uint64_t> holderMask(elements, 0);
  for (auto [id, ref] : llvm::enumerate(refs)) {
    const Piece &p = classifier.piece(ref);
    uint64_t bit = uint64_t(1) << map.shards[ref.shard].rank;
    forEachElement(p.shape, {p.source}, [&](ArrayRef<int64_t> offsets) {
      int64_t e = offsets[0];
      holderMask[e] |= bit;
      if (first[e] == kNone) {
        first[e] = id;
        return;
      }
      const Piece &head = classifier.piece(refs[first[e]]);
      if (otherLocations[e] == kNone && head.locations != p.locations)
        otherLocations[e] = id;
      if (otherScale[e] == kNone && head.scale != p.scale)
        otherScale[e] = id;
    });
  }
  llvm::SmallVector<int64_t, 8> holders;
  for (int64_t e = 0; e < elements; ++e) {
    holders.clear();
    for (int64_t r = 0; r < map.worldSize; ++r)
      if (holderMask[e] >> r & 1)
        holders.push_back(r);
    std::optional<PieceRef> head, other;
    if (first[e] != kNone)
      head = refs[first[e]];
    if (otherLocations[e] != kNone)
      other = refs[otherLocations[e]];
    else if (otherScale[e] != kNone)
      other = refs[otherScale[e]];
    classifier.classifyF(head, other, holders,
                         unravelIndex(e, map.logicalShape), 1);
  }

  // Shards: the first two writes of each element.
  for (auto [s, shard] : llvm::enumerate(map.shards)) {
    int64_t shardElements = getNumElements(shard.shape).value_or(0);
    std::vector<uint32_t> writer1(shardElements, kNone),
        writer2(shardElements, kNone);
    for (unsigned p = 0; p < shard.pieces.size(); ++p) {
      const Piece &piece = shard.pieces[p];
      forEachElement(piece.shape, {piece.dest}, [&](ArrayRef<int64_t> offsets) {
        int64_t e = offsets[0];
        if (writer1[e] == kNone)
          writer1[e] = p;
        else if (writer2[e] == kNone)
          writer2[e] = p;
      });
    }
    for (int64_t e = 0; e < shardElements; ++e) {
      llvm::SmallVector<PieceRef, 2> writers;
      if (writer1[e] != kNone)
        writers.push_back({static_cast<unsigned>(s), writer1[e]});
      if (writer2[e] != kNone)
        writers.push_back({static_cast<unsigned>(s), writer2[e]});
      classifier.classifyShard(s, writers, unravelIndex(e, shard.shape), 1);
    }
  }
  return classifier.finish();
}

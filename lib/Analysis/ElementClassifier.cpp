//===- ElementClassifier.cpp - What holds and writes each element ---------===//

#include "ucp/Analysis/ElementClassifier.h"
#include "ucp/Map/Indexing.h"

using namespace ucp;
using llvm::ArrayRef;

/// Returns whether multi-index `a` comes before `b` in row-major order.
static bool isBefore(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

void ViolationSet::add(ViolationKind kind, std::optional<PieceRef> first,
                       std::optional<PieceRef> second,
                       std::optional<unsigned> shard, ArrayRef<int64_t> holders,
                       ArrayRef<int64_t> element, int64_t count) {
  Key key{kind, first, second, shard,
          std::vector<int64_t>(holders.begin(), holders.end())};
  auto [it, inserted] = byKey.try_emplace(key);
  Violation &v = it->second;
  if (inserted) {
    v.kind = kind;
    v.first = first;
    v.second = second;
    v.shard = shard;
    v.holders.assign(holders.begin(), holders.end());
    v.firstElement.assign(element.begin(), element.end());
  } else if (isBefore(element, v.firstElement)) {
    v.firstElement.assign(element.begin(), element.end());
  }
  v.count += count;
}

std::vector<Violation> ViolationSet::take() {
  std::vector<Violation> result;
  for (auto &entry : byKey)
    result.push_back(std::move(entry.second));
  llvm::stable_sort(result, [](const Violation &a, const Violation &b) {
    if (a.kind != b.kind)
      return a.kind < b.kind;
    if (a.firstElement != b.firstElement)
      return isBefore(a.firstElement, b.firstElement);
    return std::tie(a.first, a.second, a.shard) <
           std::tie(b.first, b.second, b.shard);
  });
  return result;
}

std::optional<PieceRef>
ElementClassifier::findDiffering(ArrayRef<PieceRef> owners) const {
  if (owners.empty())
    return std::nullopt;
  const Piece &head = piece(owners.front());
  for (PieceRef other : owners.drop_front())
    if (piece(other).locations != head.locations)
      return other;
  for (PieceRef other : owners.drop_front())
    if (piece(other).scale != head.scale)
      return other;
  return std::nullopt;
}

void ElementClassifier::classifyF(std::optional<PieceRef> head,
                                  std::optional<PieceRef> differing,
                                  ArrayRef<int64_t> holders,
                                  ArrayRef<int64_t> element, int64_t count) {
  if (!head) {
    violations.add(ViolationKind::Uncovered, std::nullopt, std::nullopt,
                   std::nullopt, {}, element, count);
    return;
  }
  if (differing) {
    bool sameLocations = piece(*head).locations == piece(*differing).locations;
    violations.add(sameLocations ? ViolationKind::MixedScale
                                 : ViolationKind::MixedLocations,
                   head, differing, std::nullopt, {}, element, count);
    return;
  }
  if (holders.size() > 1)
    replicatedElements += count;
  if (holders != ArrayRef<int64_t>(piece(*head).locations))
    violations.add(ViolationKind::LocationsNotHolders, head, std::nullopt,
                   std::nullopt, holders, element, count);
}

void ElementClassifier::classifyShard(unsigned shard,
                                      ArrayRef<PieceRef> writers,
                                      ArrayRef<int64_t> element,
                                      int64_t count) {
  if (writers.empty())
    violations.add(ViolationKind::ShardHole, std::nullopt, std::nullopt, shard,
                   {}, element, count);
  else if (writers.size() > 1)
    violations.add(ViolationKind::ShardOverlap, writers[0], writers[1],
                   std::nullopt, {}, element, count);
}

void ElementClassifier::tooIrregular(PieceRef ref) {
  violations.add(ViolationKind::TooIrregular, ref, std::nullopt, std::nullopt,
                 {}, {}, getNumElements(piece(ref).shape).value_or(0));
}

VerifyReport ElementClassifier::finish() {
  VerifyReport report;
  report.violations = violations.take();
  report.elements = getNumElements(map.logicalShape).value_or(0);
  report.replicatedElements = replicatedElements;
  for (const Shard &shard : map.shards) {
    RankAccount &account = report.ranks.emplace_back();
    account.rank = shard.rank;
    account.pieces = shard.pieces.size();
    account.shardElements = getNumElements(shard.shape).value_or(0);
    for (const Piece &p : shard.pieces)
      account.pieceElements += getNumElements(p.shape).value_or(0);
  }
  return report;
}

llvm::SmallVector<PieceRef> ucp::getAllPieces(const ParamMap &map) {
  llvm::SmallVector<PieceRef> refs;
  for (auto [s, shard] : llvm::enumerate(map.shards))
    for (unsigned p = 0; p < shard.pieces.size(); ++p)
      refs.push_back({static_cast<unsigned>(s), p});
  return refs;
}

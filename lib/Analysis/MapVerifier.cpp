//===- MapVerifier.cpp - Whole-map properties of a parameter map ----------===//
//
// Both verifiers reduce every element (or every cell of elements) to the same
// classification -- which pieces hold it in F, which pieces write it in its
// shard -- and feed it to one accumulator, so that their reports agree
// exactly.
//
//===----------------------------------------------------------------------===//

#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Analysis/BoxSweep.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace ucp;
using llvm::ArrayRef;

namespace {

/// Returns whether multi-index `a` comes before `b` in row-major order.
bool isBefore(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

/// Collects violations, merging those with the same identity: counts add up
/// and the first element is the smallest in row-major order.
class ViolationSet {
public:
  void add(ViolationKind kind, std::optional<PieceRef> first,
           std::optional<PieceRef> second, std::optional<unsigned> shard,
           ArrayRef<int64_t> holders, ArrayRef<int64_t> element,
           int64_t count) {
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

  /// Returns the violations sorted by kind, first element, then pieces.
  std::vector<Violation> take() {
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

private:
  using Key = std::tuple<ViolationKind, std::optional<PieceRef>,
                         std::optional<PieceRef>, std::optional<unsigned>,
                         std::vector<int64_t>>;
  std::map<Key, Violation> byKey;
};

/// Classifies elements of one parameter map.
class Classifier {
public:
  explicit Classifier(const ParamMap &map) : map(map) {}

  const Piece &piece(PieceRef ref) const {
    return map.shards[ref.shard].pieces[ref.piece];
  }

  /// Returns the first of `owners` after the first that declares other
  /// locations than the first, or failing that another scale.
  std::optional<PieceRef> findDiffering(ArrayRef<PieceRef> owners) const {
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

  /// Classifies `count` elements of F starting at `element`: `head` is the
  /// first piece holding them (none if uncovered), `differing` the one
  /// `findDiffering` picks among the holders, and `holders` the ranks whose
  /// pieces hold them (ascending).
  void classifyF(std::optional<PieceRef> head,
                 std::optional<PieceRef> differing, ArrayRef<int64_t> holders,
                 ArrayRef<int64_t> element, int64_t count) {
    if (!head) {
      violations.add(ViolationKind::Uncovered, std::nullopt, std::nullopt,
                     std::nullopt, {}, element, count);
      return;
    }
    if (differing) {
      bool sameLocations =
          piece(*head).locations == piece(*differing).locations;
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

  /// Classifies `count` elements of shard `shard` starting at `element`,
  /// written by `writers` (ascending, one entry per write).
  void classifyShard(unsigned shard, ArrayRef<PieceRef> writers,
                     ArrayRef<int64_t> element, int64_t count) {
    if (writers.empty())
      violations.add(ViolationKind::ShardHole, std::nullopt, std::nullopt,
                     shard, {}, element, count);
    else if (writers.size() > 1)
      violations.add(ViolationKind::ShardOverlap, writers[0], writers[1],
                     std::nullopt, {}, element, count);
  }

  void tooIrregular(PieceRef ref) {
    violations.add(ViolationKind::TooIrregular, ref, std::nullopt, std::nullopt,
                   {}, {}, getNumElements(piece(ref).shape).value_or(0));
  }

  /// Fills everything but `cells` from what was classified.
  VerifyReport finish() {
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

private:
  const ParamMap &map;
  ViolationSet violations;
  int64_t replicatedElements = 0;
};

/// Returns every piece of `map` in ascending order.
llvm::SmallVector<PieceRef> getAllPieces(const ParamMap &map) {
  llvm::SmallVector<PieceRef> refs;
  for (auto [s, shard] : llvm::enumerate(map.shards))
    for (unsigned p = 0; p < shard.pieces.size(); ++p)
      refs.push_back({static_cast<unsigned>(s), p});
  return refs;
}

} // namespace

//===----------------------------------------------------------------------===//
// Geometry
//===----------------------------------------------------------------------===//

VerifyReport ucp::verifyParamMap(const ParamMap &map) {
  Classifier classifier(map);
  int64_t cells = 0;

  // P1 and P5 over the boxes of F.
  llvm::SmallVector<Box> boxes;
  llvm::SmallVector<PieceRef> boxOwner;
  bool decomposed = true;
  for (PieceRef ref : getAllPieces(map)) {
    const Piece &p = classifier.piece(ref);
    if (!decomposeView(p.shape, p.source, map.logicalShape, Repeats::Collapse,
                       boxes)) {
      classifier.tooIrregular(ref);
      decomposed = false;
    }
    boxOwner.resize(boxes.size(), ref);
  }
  if (!decomposed)
    return classifier.finish();

  llvm::SmallVector<PieceRef, 8> owners;
  llvm::SmallVector<int64_t, 8> holders;
  cells += sweepBoxes(
      boxes, map.logicalShape, [&](const Box &cell, ArrayRef<unsigned> boxIds) {
        owners.clear();
        holders.clear();
        for (unsigned id : boxIds) {
          if (owners.empty() || !(owners.back() == boxOwner[id]))
            owners.push_back(boxOwner[id]);
          holders.push_back(map.shards[boxOwner[id].shard].rank);
        }
        llvm::sort(holders);
        holders.erase(std::unique(holders.begin(), holders.end()),
                      holders.end());
        std::optional<PieceRef> head;
        if (!owners.empty())
          head = owners.front();
        classifier.classifyF(head, classifier.findDiffering(owners), holders,
                             cell.lo, cell.getNumElements());
      });

  // Tiling of every shard.
  for (auto [s, shard] : llvm::enumerate(map.shards)) {
    boxes.clear();
    boxOwner.clear();
    for (unsigned p = 0; p < shard.pieces.size(); ++p) {
      PieceRef ref{static_cast<unsigned>(s), p};
      const Piece &piece = shard.pieces[p];
      if (!decomposeView(piece.shape, piece.dest, shard.shape, Repeats::Keep,
                         boxes)) {
        classifier.tooIrregular(ref);
        return classifier.finish();
      }
      boxOwner.resize(boxes.size(), ref);
    }
    cells += sweepBoxes(
        boxes, shard.shape, [&](const Box &cell, ArrayRef<unsigned> boxIds) {
          owners.clear();
          for (unsigned id : boxIds)
            owners.push_back(boxOwner[id]);
          classifier.classifyShard(s, owners, cell.lo, cell.getNumElements());
        });
  }

  VerifyReport report = classifier.finish();
  report.cells = cells;
  return report;
}

//===----------------------------------------------------------------------===//
// Element walk
//===----------------------------------------------------------------------===//

VerifyReport ucp::verifyParamMapByWalking(const ParamMap &map) {
  if (map.worldSize > 64)
    llvm::report_fatal_error("the element walk tracks at most 64 ranks");
  Classifier classifier(map);
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

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

/// Returns "1 element" or "N elements".
static std::string countElements(int64_t count) {
  return std::to_string(count) + (count == 1 ? " element" : " elements");
}

std::string ucp::describeViolation(const ParamMap &map, const Violation &v) {
  auto pieceName = [&](PieceRef ref) {
    return "rank " + std::to_string(map.shards[ref.shard].rank) + " piece #" +
           std::to_string(ref.piece);
  };
  auto pieceOf = [&](PieceRef ref) -> const Piece & {
    return map.shards[ref.shard].pieces[ref.piece];
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "parameter '" << map.name << "': ";
  std::string firstIs = "; the first is " + formatList(v.firstElement);
  switch (v.kind) {
  case ViolationKind::Uncovered:
    os << countElements(v.count) << " of F " << (v.count == 1 ? "is" : "are")
       << " held by no piece (P1)" << firstIs;
    break;
  case ViolationKind::MixedLocations:
    os << pieceName(*v.first) << " (locations "
       << formatList(pieceOf(*v.first).locations) << ") and "
       << pieceName(*v.second) << " (locations "
       << formatList(pieceOf(*v.second).locations) << ") share "
       << countElements(v.count) << " of F but declare different locations (P5)"
       << firstIs;
    break;
  case ViolationKind::MixedScale:
    os << pieceName(*v.first) << " (scale "
       << formatScale(pieceOf(*v.first).scale) << ") and "
       << pieceName(*v.second) << " (scale "
       << formatScale(pieceOf(*v.second).scale) << ") share "
       << countElements(v.count) << " of F but declare different scales (P5)"
       << firstIs;
    break;
  case ViolationKind::LocationsNotHolders:
    os << pieceName(*v.first) << " declares locations "
       << formatList(pieceOf(*v.first).locations) << " but "
       << countElements(v.count) << " of it in F "
       << (v.count == 1 ? "is" : "are") << " held by ranks "
       << formatList(v.holders) << " only (P5)" << firstIs;
    break;
  case ViolationKind::ShardHole:
    os << "rank " << map.shards[*v.shard].rank << ": " << countElements(v.count)
       << " of the shard " << (v.count == 1 ? "is" : "are")
       << " written by no piece" << firstIs;
    break;
  case ViolationKind::ShardOverlap:
    if (*v.first == *v.second)
      os << pieceName(*v.first) << " writes " << countElements(v.count)
         << " of the shard more than once" << firstIs;
    else
      os << "rank " << map.shards[v.first->shard].rank << " pieces #"
         << v.first->piece << " and #" << v.second->piece << " both write "
         << countElements(v.count) << " of the shard" << firstIs;
    break;
  case ViolationKind::TooIrregular:
    os << pieceName(*v.first) << ": a view decomposes into more than "
       << kMaxBoxesPerView
       << " boxes, which the analytic verifier does not handle";
    break;
  }
  return text;
}

llvm::Error ucp::checkParamMap(const ParamMap &map) {
  auto refuse = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "parameter '" + map.name +
                                       "': " + why.str());
  };
  if (std::string error = checkParamHeader(map.logicalShape, map.worldSize,
                                           map.originalVocabSize);
      !error.empty())
    return refuse(error);
  for (const Shard &shard : map.shards) {
    if (std::string error =
            checkShardHeader(shard.rank, shard.shape, map.worldSize);
        !error.empty())
      return refuse("rank " + std::to_string(shard.rank) + ": " + error);
    for (auto [i, piece] : llvm::enumerate(shard.pieces))
      if (std::string error = checkPiece(piece, map.logicalShape, shard.shape,
                                         shard.rank, map.worldSize);
          !error.empty())
        return refuse("rank " + std::to_string(shard.rank) + " piece #" +
                      std::to_string(i) + ": " + error);
  }
  VerifyReport report = verifyParamMap(map);
  if (report.ok())
    return llvm::Error::success();
  std::string message = describeViolation(map, report.violations.front());
  for (size_t i = 1;
       i < std::min(report.violations.size(), kMaxListedViolations); ++i)
    message += "\n  " + describeViolation(map, report.violations[i]);
  if (report.violations.size() > kMaxListedViolations)
    message += "\n  and " +
               std::to_string(report.violations.size() - kMaxListedViolations) +
               " more violations";
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

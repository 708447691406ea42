//===- MapVerifier.cpp - Whole-map properties of a parameter map ----------===//
//
// The verifier reduces every cell of elements to the classification of
// ElementClassifier -- which pieces hold it in F, which pieces write it in
// its shard -- as the tests' element walk does for single elements, so that
// their reports agree exactly.
//
//===----------------------------------------------------------------------===//

#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Analysis/BoxSweep.h"
#include "ucp/Analysis/ElementClassifier.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace ucp;
using llvm::ArrayRef;

//===----------------------------------------------------------------------===//
// Geometry
//===----------------------------------------------------------------------===//

VerifyReport ucp::verifyParamMap(const ParamMap &map) {
  ElementClassifier classifier(map);
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
    return makeError("parameter '" + map.name + "': " + why.str());
  };
  if (std::string error = checkMapInvariants(map); !error.empty())
    return refuse(error);
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
  return makeError(message);
}

//===- MapVerifier.h - Whole-map properties of a parameter map --*- C++ -*-===//
//
// The properties a single op cannot check, for one parameter map:
//
//  * P1 coverage: every element of F is held by at least one piece;
//  * P5 homogeneity: pieces sharing an element of F declare equal locations
//    and equal scale, and those locations are exactly the ranks whose pieces
//    hold the element;
//  * shard tiling: every element of every shard is written by exactly one
//    piece;
//  * per-rank accounting: shard elements, piece elements, pieces.
//
// `verifyParamMap` answers all of them by geometry (box decomposition and a
// sweep), at a cost that depends on the pieces, not on the elements. The
// tests check it against an element walk (test/unit/WalkingVerifier.h) that
// feeds the same classifier (ElementClassifier.h).
//
// The map must satisfy the local invariants (ucp::checkPiece and friends).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ANALYSIS_MAPVERIFIER_H
#define UCP_ANALYSIS_MAPVERIFIER_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// A piece of a map: the index of its shard in `ParamMap::shards` and its
/// index in that shard's `pieces`.
struct PieceRef {
  unsigned shard = 0;
  unsigned piece = 0;

  bool operator==(const PieceRef &o) const {
    return shard == o.shard && piece == o.piece;
  }
  bool operator<(const PieceRef &o) const {
    return std::tie(shard, piece) < std::tie(o.shard, o.piece);
  }
};

/// What went wrong.
enum class ViolationKind {
  /// P1: elements of F no piece holds.
  Uncovered,
  /// P5: two pieces share elements of F but declare different locations.
  MixedLocations,
  /// P5: two pieces share elements of F but declare different scales.
  MixedScale,
  /// P5: a piece's locations differ from the ranks whose pieces hold it.
  LocationsNotHolders,
  /// Shard elements no piece writes.
  ShardHole,
  /// Shard elements written twice (by two pieces, or twice by one).
  ShardOverlap,
  /// A piece whose view is too irregular for the analytic method.
  TooIrregular,
};

/// One violation, aggregated over all the elements it affects.
struct Violation {
  ViolationKind kind;
  /// The piece at fault; unset for Uncovered.
  std::optional<PieceRef> first;
  /// The other piece of a pair (MixedLocations, MixedScale, ShardOverlap).
  std::optional<PieceRef> second;
  /// The shard (index into `ParamMap::shards`) for ShardHole.
  std::optional<unsigned> shard;
  /// For LocationsNotHolders: the ranks actually holding the elements.
  llvm::SmallVector<int64_t, 4> holders;
  /// The first affected element in row-major order, as a multi-index into F
  /// (P1, P5) or into the shard (tiling).
  Extents firstElement;
  /// How many elements are affected.
  int64_t count = 0;

  bool operator==(const Violation &o) const {
    return kind == o.kind && first == o.first && second == o.second &&
           shard == o.shard && holders == o.holders &&
           firstElement == o.firstElement && count == o.count;
  }
};

/// Element accounting for one rank.
struct RankAccount {
  int64_t rank = 0;
  int64_t pieces = 0;
  int64_t shardElements = 0;
  /// The sum of the pieces' element counts.
  int64_t pieceElements = 0;
};

/// The result of verifying one parameter map.
struct VerifyReport {
  /// Sorted by kind, then first element, then pieces.
  std::vector<Violation> violations;
  std::vector<RankAccount> ranks;
  /// Elements of F.
  int64_t elements = 0;
  /// Elements of F held by more than one rank.
  int64_t replicatedElements = 0;
  /// Cells the sweeps visited (0 for the element walk): the unit of work of
  /// the analytic method, independent of the number of elements.
  int64_t cells = 0;

  bool ok() const { return violations.empty(); }
};

/// Verifies `map` by geometry.
VerifyReport verifyParamMap(const ParamMap &map);

/// Returns a one-line description of `violation` naming the parameter, the
/// rank(s), the piece(s), the first element and the count.
std::string describeViolation(const ParamMap &map, const Violation &violation);

/// The most violations an error of checkParamMap lists.
constexpr size_t kMaxListedViolations = 10;

/// Checks all of `map`: the local invariants of its header, shards and
/// pieces, then P1, P5 and shard tiling. What builds a map (a layout, an
/// index-map derivation, legacy metadata) checks it before anything else
/// sees it; the error names the parameter, rank and piece of the first
/// broken local invariant, or lists the first kMaxListedViolations
/// violations.
llvm::Error checkParamMap(const ParamMap &map);

} // namespace ucp

#endif // UCP_ANALYSIS_MAPVERIFIER_H

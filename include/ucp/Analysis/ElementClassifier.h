//===- ElementClassifier.h - What holds and writes each element -*- C++ -*-===//
//
// The accumulator every verifier of a map feeds: for elements of F (or
// cells of them), which pieces hold them; for elements of a shard, which
// pieces write them. The geometric verifier classifies whole cells, an
// element walk (the tests' oracle) single elements; both get the same
// report from finish().
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ANALYSIS_ELEMENTCLASSIFIER_H
#define UCP_ANALYSIS_ELEMENTCLASSIFIER_H

#include "ucp/Analysis/MapVerifier.h"

#include <map>
#include <tuple>

namespace ucp {

/// Collects violations, merging those with the same identity: counts add up
/// and the first element is the smallest in row-major order.
class ViolationSet {
public:
  void add(ViolationKind kind, std::optional<PieceRef> first,
           std::optional<PieceRef> second, std::optional<unsigned> shard,
           llvm::ArrayRef<int64_t> holders, llvm::ArrayRef<int64_t> element,
           int64_t count);

  /// Returns the violations sorted by kind, first element, then pieces.
  std::vector<Violation> take();

private:
  using Key = std::tuple<ViolationKind, std::optional<PieceRef>,
                         std::optional<PieceRef>, std::optional<unsigned>,
                         std::vector<int64_t>>;
  std::map<Key, Violation> byKey;
};

/// Classifies elements of one parameter map.
class ElementClassifier {
public:
  explicit ElementClassifier(const ParamMap &map) : map(map) {}

  const Piece &piece(PieceRef ref) const {
    return map.shards[ref.shard].pieces[ref.piece];
  }

  /// Returns the first of `owners` after the first that declares other
  /// locations than the first, or failing that another scale.
  std::optional<PieceRef> findDiffering(llvm::ArrayRef<PieceRef> owners) const;

  /// Classifies `count` elements of F starting at `element`: `head` is the
  /// first piece holding them (none if uncovered), `differing` the one
  /// `findDiffering` picks among the holders, and `holders` the ranks whose
  /// pieces hold them (ascending).
  void classifyF(std::optional<PieceRef> head,
                 std::optional<PieceRef> differing,
                 llvm::ArrayRef<int64_t> holders,
                 llvm::ArrayRef<int64_t> element, int64_t count);

  /// Classifies `count` elements of shard `shard` starting at `element`,
  /// written by `writers` (ascending, one entry per write).
  void classifyShard(unsigned shard, llvm::ArrayRef<PieceRef> writers,
                     llvm::ArrayRef<int64_t> element, int64_t count);

  /// Records a piece too irregular for the geometric verifier.
  void tooIrregular(PieceRef ref);

  /// Fills everything but `cells` from what was classified.
  VerifyReport finish();

private:
  const ParamMap &map;
  ViolationSet violations;
  int64_t replicatedElements = 0;
};

/// Returns every piece of `map` in ascending order.
llvm::SmallVector<PieceRef> getAllPieces(const ParamMap &map);

} // namespace ucp

#endif // UCP_ANALYSIS_ELEMENTCLASSIFIER_H

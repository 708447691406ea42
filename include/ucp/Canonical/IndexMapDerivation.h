//===- IndexMapDerivation.h - Canonical maps from index maps ----*- C++ -*-===//
//
// The spec's §5 method as a library: given, for every element of every
// rank's shard, the flat offset of F it came from, derive the canonical map.
// The same offset on several ranks is replication; runs of consecutive
// offsets with one holder set become blocks, and folding does the rest.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CANONICAL_INDEXMAPDERIVATION_H
#define UCP_CANONICAL_INDEXMAPDERIVATION_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// What one rank holds, element by element.
struct IndexShard {
  int64_t rank = 0;
  Extents shape;
  /// The flat offset into F of every shard element, in row-major order.
  std::vector<int64_t> index;
};

/// The index map of one parameter.
struct IndexMap {
  std::string name;
  Extents logicalShape;
  /// At least one more than every rank.
  int64_t worldSize = 1;
  /// In ascending rank order.
  std::vector<IndexShard> shards;
};

/// Derives the canonical map of `indexMap`. Refuses an index map that is not
/// a view: a shard whose index has the wrong length, or an offset outside F.
llvm::Expected<ParamMap> deriveParamMap(const IndexMap &indexMap);

/// Returns the index map of `map`: for every shard element, the F offset
/// its piece reads (the last write wins where pieces overlap; elements no
/// piece writes get -1). The inverse of `deriveParamMap` up to
/// canonicalization.
IndexMap getIndexMap(const ParamMap &map);

} // namespace ucp

#endif // UCP_CANONICAL_INDEXMAPDERIVATION_H

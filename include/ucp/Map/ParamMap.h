//===- ParamMap.h - Plain C++ model of a parameter map ----------*- C++ -*-===//
//
// The IR's content as plain data, so that analyses, importers and executors
// can work without an MLIRContext. The ucp dialect ops convert to and from
// these structs one to one (see ucp/Dialect/UCP/IR/ParamMapConversion.h).
// Value types only: the index arithmetic is in Indexing.h and the local
// invariants in Invariants.h, so that a change to either rebuilds only
// what uses it.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_MAP_PARAMMAP_H
#define UCP_MAP_PARAMMAP_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ucp {

/// A list of extents, strides or a multi-index, outermost dimension first.
using Extents = llvm::SmallVector<int64_t, 4>;

/// One side of a piece: `torch.as_strided`'s storage offset and strides, in
/// elements.
struct StridedView {
  int64_t offset = 0;
  Extents strides;

  bool operator==(const StridedView &other) const {
    return offset == other.offset && strides == other.strides;
  }
};

/// A block of F held by a shard (spec §2.1).
struct Piece {
  /// The extent of the block, shared by both views.
  Extents shape;
  /// Where the block sits in F.
  StridedView source;
  /// Where the block sits in the shard.
  StridedView dest;
  /// The ranks holding identical data for the block; sorted and unique.
  llvm::SmallVector<int64_t, 4> locations;
  /// The shard holds `full * scale`.
  double scale = 1.0;

  bool operator==(const Piece &other) const {
    return shape == other.shape && source == other.source &&
           dest == other.dest && locations == other.locations &&
           scale == other.scale;
  }
};

/// What one rank holds of a parameter: a row-major tensor of `shape`
/// filled by `pieces`.
struct Shard {
  int64_t rank = 0;
  Extents shape;
  std::vector<Piece> pieces;

  bool operator==(const Shard &other) const {
    return rank == other.rank && shape == other.shape && pieces == other.pieces;
  }
};

/// The map of one parameter over a group of `worldSize` ranks (spec §2.2).
/// Shards are in ascending rank order; a rank without a shard holds nothing.
struct ParamMap {
  std::string name;
  Extents logicalShape;
  int64_t worldSize = 1;
  std::vector<Shard> shards;
  /// For a vocabulary padded to an even split: the number of real rows of
  /// dimension 0 (the rest is padding carried in F, spec §8.1).
  std::optional<int64_t> originalVocabSize;

  bool operator==(const ParamMap &other) const {
    return name == other.name && logicalShape == other.logicalShape &&
           worldSize == other.worldSize && shards == other.shards &&
           originalVocabSize == other.originalVocabSize;
  }
};

} // namespace ucp

#endif // UCP_MAP_PARAMMAP_H

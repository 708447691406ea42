//===- ParamMap.h - Plain C++ model of a parameter map ----------*- C++ -*-===//
//
// The IR's content as plain data, so that analyses, importers and executors
// can work without an MLIRContext. The ucp dialect ops convert to and from
// these structs one to one (see ucp/Dialect/UCP/IR/ParamMapConversion.h).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_MAP_PARAMMAP_H
#define UCP_MAP_PARAMMAP_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
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

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

/// Returns the number of elements of `shape`, or nothing if it overflows
/// int64 or an extent is negative.
std::optional<int64_t> getNumElements(llvm::ArrayRef<int64_t> shape);

/// Returns the row-major strides of `shape`.
Extents getRowMajorStrides(llvm::ArrayRef<int64_t> shape);

/// Whether the row-major strides of `shape` fit in int64. A shape of no
/// elements may have strides that do not: [0, 2^40, 2^40].
bool hasRowMajorStrides(llvm::ArrayRef<int64_t> shape);

/// Returns the multi-index of the row-major storage `offset` in `shape`.
Extents unravelIndex(int64_t offset, llvm::ArrayRef<int64_t> shape);

/// Returns the storage offset of the last element of the view `shape` at
/// `view` (the largest offset it touches), or nothing on int64 overflow.
/// The view must be non-empty.
std::optional<int64_t> getLastOffset(llvm::ArrayRef<int64_t> shape,
                                     const StridedView &view);

/// Steps the multi-index `index` to the next one of `shape` in row-major
/// order; returns false, with `index` back at all zeros, after the last.
bool advanceIndex(llvm::MutableArrayRef<int64_t> index,
                  llvm::ArrayRef<int64_t> shape);

/// Calls `fn` with the storage offset on each side of every element of the
/// views `views` (all of `shape`), in row-major order of `shape`. Walks
/// elements one by one: for references and tests, not hot paths.
void forEachElement(llvm::ArrayRef<int64_t> shape,
                    llvm::ArrayRef<StridedView> views,
                    llvm::function_ref<void(llvm::ArrayRef<int64_t>)> fn);

/// Prints a multi-index or shape as `[a, b, c]`.
std::string formatList(llvm::ArrayRef<int64_t> values);

/// Prints a scale in the shortest form that keeps 9 significant digits
/// (`0.25`, `3`, `inf`).
std::string formatScale(double scale);

//===----------------------------------------------------------------------===//
// Local invariants
//
// Each check returns an empty string when the invariant holds and otherwise
// a lower-case diagnostic naming the offending value. Op verifiers and the
// importers share them so that a map is refused with the same words
// whichever way it arrives.
//===----------------------------------------------------------------------===//

/// A view that must lie inside a buffer of `bufferElements` elements; `side`
/// and `buffer` name them in diagnostics ("source", "F").
struct ViewInBuffer {
  const StridedView *view;
  int64_t bufferElements;
  const char *side;
  const char *buffer;
};

/// Checks views of one `shape`: as many strides as dimensions, non-negative
/// extents, strides and offsets, and (when non-empty) every element inside
/// its buffer.
std::string checkViews(llvm::ArrayRef<int64_t> shape,
                       llvm::ArrayRef<ViewInBuffer> views);

/// The most ranks a world may have: 2^20, beyond any job run today. A
/// larger world is a corrupt or mistyped value, and the tools that list
/// every rank (one shard or file each) would run out of time or memory.
constexpr int64_t kMaxWorldSize = int64_t(1) << 20;

/// The most location entries, over all the pieces of a map, that a map
/// built from a few numbers (a layout at some `--tp`, legacy metadata, an
/// index map) may hold. Each holder of a replicated block lists all of its
/// holders, so a block on W ranks costs W^2 entries; without a bound, a
/// world within kMaxWorldSize would run out of memory. 2^26 entries
/// (512 MiB) hold a block replicated on 8192 ranks.
constexpr int64_t kMaxMapLocations = int64_t(1) << 26;

/// Checks that a map of `entries` location entries fits kMaxMapLocations;
/// "" when it does.
std::string checkLocationCount(int64_t entries);

/// Checks that `worldSize` lies in [1, kMaxWorldSize]; "" when it does.
/// `what` names the value in the message ("world size", "ep_size").
std::string checkWorldSize(int64_t worldSize,
                           llvm::StringRef what = "world size");

/// Checks a parameter's logical shape, world size and, when set, its
/// original vocabulary size (at most the rows of F).
std::string checkParamHeader(llvm::ArrayRef<int64_t> logicalShape,
                             int64_t worldSize,
                             std::optional<int64_t> originalVocabSize = {});

/// Checks a shard's rank and shape against its parameter's world size.
std::string checkShardHeader(int64_t rank, llvm::ArrayRef<int64_t> shardShape,
                             int64_t worldSize);

/// Checks everything about `piece` that needs no other piece: ranks of the
/// shape and strides, signs, both views in bounds, locations and scale.
std::string checkPiece(const Piece &piece, llvm::ArrayRef<int64_t> logicalShape,
                       llvm::ArrayRef<int64_t> shardShape, int64_t rank,
                       int64_t worldSize);

} // namespace ucp

#endif // UCP_MAP_PARAMMAP_H

//===- Invariants.h - The local invariants of maps --------------*- C++ -*-===//
//
// What a map, shard or piece must satisfy on its own. Each check returns an
// empty string when the invariant holds and otherwise a lower-case
// diagnostic naming the offending value. Op verifiers and the importers
// share them so that a map is refused with the same words whichever way it
// arrives.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_MAP_INVARIANTS_H
#define UCP_MAP_INVARIANTS_H

#include "ucp/Map/ParamMap.h"

namespace ucp {

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

/// Checks the local invariants of all of `map`: its header, then each
/// shard's header and pieces; the first one broken, named by rank and
/// piece ("rank 1 piece #0: ..."). Says nothing of P1, P5 or tiling.
std::string checkMapInvariants(const ParamMap &map);

} // namespace ucp

#endif // UCP_MAP_INVARIANTS_H

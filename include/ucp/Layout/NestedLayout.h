//===- NestedLayout.h - Shards sharded again --------------------*- C++ -*-===//
//
// Parallelisms stack: tensor parallelism cuts F into TP shards, and ZeRO
// then cuts each TP shard (flattened) into data-parallel fragments. Both
// cuts are maps, so the stack is one: the map of F over the grid of both
// groups, each grid rank's shard its inner shard, its pieces the outer
// pieces seen through the inner ones. No layout is special-cased: any
// outer map and any inner maps compose.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LAYOUT_NESTEDLAYOUT_H
#define UCP_LAYOUT_NESTEDLAYOUT_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// Returns the map of F over `outer.worldSize * W` ranks, where `inner[r]`
/// (one per outer rank, each over W ranks) shards outer rank r's shard: its
/// logical shape is that shard's shape. Grid rank `d * outer.worldSize + r`
/// holds inner rank d's shard of outer rank r (DeepSpeed numbers its DP x
/// TP grid so, TP fastest). Scales multiply; locations are derived anew
/// (assignLocations), so the result is canonical. Refuses inner maps of
/// another shape or world, and inner pieces that reach an element of the
/// outer shard that no outer piece fills.
llvm::Expected<ParamMap> nestShardMaps(const ParamMap &outer,
                                       llvm::ArrayRef<ParamMap> inner);

/// Returns the inner map that flattens a shard of `shape` and gives rank d
/// the `sizes[d]` elements after those of ranks before it (ZeRO's
/// fragments of one parameter, stacked in DP-rank order). The sizes must
/// sum to the shard's elements.
llvm::Expected<ParamMap> buildFlatRangeLayout(llvm::StringRef name,
                                              llvm::ArrayRef<int64_t> shape,
                                              llvm::ArrayRef<int64_t> sizes);

} // namespace ucp

#endif // UCP_LAYOUT_NESTEDLAYOUT_H

//===- ZeroFlattening.h - Where ZeRO puts a group's parameters ---*- C++
//-*-===//
//
// How ZeRO partitions an optimizer parameter group over `dp` ranks:
//
//  * ZeRO-1/2 concatenates the group's parameters in order into one flat
//    buffer, pads it to a multiple of `2 x dp` elements
//    (nccl_start_alignment_factor 2, whatever the dtype) and cuts it into
//    `dp` equal partitions; a parameter may straddle two or more
//    partitions, and the padding is at the end of the last ones;
//  * ZeRO-3 partitions every parameter alone: it takes `ceil(numel / dp)`
//    slots in every rank's partition, rank r holding its elements from
//    `r * slots`, the slot's rest padding.
//
// The writers of ZeRO checkpoints lay groups out with it; the reader checks
// the records of real ones against the same placement.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DEEPSPEED_ZEROFLATTENING_H
#define UCP_DEEPSPEED_ZEROFLATTENING_H

#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"

namespace ucp {

/// One parameter group partitioned for `dp` ranks.
struct ZeroGroupLayout {
  int64_t dp = 1;
  /// Whether each parameter is partitioned alone (ZeRO-3) rather than the
  /// group's concatenation (ZeRO-1/2).
  bool perParameter = false;
  /// Elements of each rank's partition, padding included.
  int64_t partition = 0;
  /// Each parameter's first element: in the flat buffer (ZeRO-1/2), or of
  /// its slots in every partition (ZeRO-3); and its elements.
  std::vector<int64_t> offsets, elements;
  /// The real elements of the group.
  int64_t total = 0;

  /// The padded length of the group's flat buffer (ZeRO-1/2).
  int64_t getPaddedLength() const { return partition * dp; }
  /// The padding elements in rank `rank`'s partition.
  int64_t getPadding(int64_t rank) const;
  /// Parameter `param`'s fragment on rank `rank`: its offset in the
  /// partition and its elements ({0, 0} where they do not meet).
  FragmentSlice getSlice(size_t param, int64_t rank) const;
};

/// Lays out a group of parameters of `elements` each for `dp` ranks as ZeRO
/// stage `stage` (1 to 3) does.
ZeroGroupLayout layOutZeroGroup(llvm::ArrayRef<int64_t> elements, int64_t dp,
                                int stage);

/// The map of a tensor each of whose TP shards (those of `tpMap`) ZeRO-3
/// partitions alone over `dp` ranks, as layOutZeroGroup places one
/// parameter (at `dp` 1, each shard whole): grid rank d * tp + t holds TP
/// shard t's slots on DP rank d. A frozen parameter's layout.
llvm::Expected<ParamMap> nestZero3Slots(const ParamMap &tpMap, int64_t dp);

} // namespace ucp

#endif // UCP_DEEPSPEED_ZEROFLATTENING_H

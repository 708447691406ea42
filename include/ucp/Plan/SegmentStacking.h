//===- SegmentStacking.h - Fold copies that repeat at a stride --*- C++ -*-===//
//
// Folding in the target shard merges copies that touch. A target shard
// assembled from interleaved source blocks also holds copies that repeat:
// the same shape and strides on both sides, at offsets that advance by a
// constant step in the target and in the source (Yuan's o_proj: one column
// block every 8 elements of the target, every 4 of the source). Stacking
// turns such a progression into one copy with an extra outer dimension,
// repeatedly, so that a plan's size follows the block structure of the two
// layouts and not the size of the tensor (spec §8.2).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_PLAN_SEGMENTSTACKING_H
#define UCP_PLAN_SEGMENTSTACKING_H

#include "ucp/Plan/TransferPlan.h"

namespace ucp {

/// Rewrites `segment` with its dimensions ordered by decreasing target
/// stride, dimensions contiguous on both sides merged and extent-1
/// dimensions dropped (one dimension at least is kept).
void normalizeSegment(Segment &segment);

/// Stacks progressions of `segments` (all of one target rank) until none is
/// left; every element keeps its source and target place.
void stackSegments(std::vector<Segment> &segments);

} // namespace ucp

#endif // UCP_PLAN_SEGMENTSTACKING_H

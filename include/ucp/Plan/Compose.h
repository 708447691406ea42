//===- Compose.h - M_t o M_s^-1 without materialising F ---------*- C++ -*-===//
//
// Composes a source map and a target map of the same parameter into a
// transfer plan (docs/Composition.md):
//
//  1. both maps are canonicalized, so every piece is a box of F;
//  2. each target piece is intersected with the source boxes by a sweep;
//     every cell of the intersection is read from one holder, chosen by the
//     replica policy; cells no source holds become fills;
//  3. each cell is re-expressed in the target shard (the thing being
//     written, disjointly) with its place in the source shard, and cells are
//     folded there, grouped by source rank and scale (spec §8.2), so that a
//     target shard assembled from interleaved source blocks folds too.
//
// With original_vocab_size known on either map, composition is restricted
// to rows [0, V): source padding is never read and target padding is
// filled, whatever heights the two sides pad to (spec §8.1).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_PLAN_COMPOSE_H
#define UCP_PLAN_COMPOSE_H

#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// Elements each source rank has sent so far (each process, to other
/// processes, when the policy names processes); shared across the
/// parameters of one plan so that the Balance policy balances the whole
/// transfer.
using SentElements = std::map<int64_t, int64_t>;

/// Returns the plan that fills `target`'s shards from `source`'s. The maps
/// must satisfy the local invariants and P5; their logical shapes must
/// agree (but for the padded rows of a vocabulary).
llvm::Expected<TransferPlan> composeMaps(const ParamMap &source,
                                         const ParamMap &target,
                                         const ReplicaPolicy &policy,
                                         SentElements &sent);

/// Returns the map of F itself: one rank holding all of it (for a padded
/// vocabulary, its real rows only). Extract composes this map into a
/// target; rebuild composes a source into it.
ParamMap getFullTensorMap(const ParamMap &map);

} // namespace ucp

#endif // UCP_PLAN_COMPOSE_H

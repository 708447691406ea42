//===- SplitSizes.h - DeepSpeed's tensor-parallel split sizes ---*- C++ -*-===//
//
// How many rows (or columns) each rank gets, exactly as DeepSpeed's
// `get_shard_size_list` decides (deepspeed-facts §1): the kv-head branch,
// then the grain-size branch, then an even split with the remainder on the
// low ranks. Empty ranks are legal.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LAYOUT_SPLITSIZES_H
#define UCP_LAYOUT_SPLITSIZES_H

#include "ucp/Map/ParamMap.h"

namespace ucp {

/// The inputs of the split rule besides the total and the degree.
struct SplitRule {
  /// The model's `num_kv_heads`, if set.
  std::optional<int64_t> numKvHeads;
  /// `tp_grain_size`.
  int64_t grainSize = 1;
  /// The parameter's name: MLP and vocabulary parameters never take the
  /// kv-head branch.
  std::string name;
};

/// Whether DeepSpeed lets parameter `name` split by whole kv heads (MLP
/// and vocabulary parameters never do).
bool maySplitByKvHeads(llvm::StringRef name);

/// Returns the sizes DeepSpeed gives the `tp` ranks for `total` rows.
Extents getShardSizes(int64_t total, int64_t tp, const SplitRule &rule = {});

} // namespace ucp

#endif // UCP_LAYOUT_SPLITSIZES_H

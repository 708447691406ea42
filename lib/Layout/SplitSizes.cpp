//===- SplitSizes.cpp - DeepSpeed's tensor-parallel split sizes -----------===//

#include "ucp/Layout/SplitSizes.h"

using namespace ucp;

bool ucp::maySplitByKvHeads(llvm::StringRef name) {
  for (llvm::StringRef excluded : {"mlp", "lm_head", "embed_out", "gate_proj",
                                   "up_proj", "down_proj", "w1", "w2", "w3"}) {
    if (name.contains(excluded))
      return false;
  }
  return true;
}

Extents ucp::getShardSizes(int64_t total, int64_t tp, const SplitRule &rule) {
  Extents sizes;
  if (rule.numKvHeads && *rule.numKvHeads > 0 &&
      total % *rule.numKvHeads == 0 && maySplitByKvHeads(rule.name)) {
    int64_t kv = *rule.numKvHeads;
    // total * heads / kv, divided first (total is a multiple of kv) so
    // that the product cannot overflow.
    for (int64_t r = 0; r < tp; ++r)
      sizes.push_back(total / kv * (kv / tp + (r < kv % tp)));
    return sizes;
  }
  int64_t grain = std::max<int64_t>(rule.grainSize, 1);
  if (total >= grain) {
    int64_t grains = total / grain;
    for (int64_t r = 0; r < tp; ++r)
      sizes.push_back((grains / tp + (r < grains % tp)) * grain);
    sizes.back() += total % grain;
    return sizes;
  }
  for (int64_t r = 0; r < tp; ++r)
    sizes.push_back(total / tp + (r < total % tp));
  return sizes;
}

//===- ExpertPlacement.h - AutoEP expert placement as a map -----*- C++ -*-===//
//
// AutoEP's placement descriptor (spec §8.4, deepspeed-facts §5) records,
// for each rank of the expert-parallel group, the global expert ids it holds
// in local packed order. Placements may be uneven, non-contiguous,
// replicated or empty. Lowered over the logical `[num_experts, ...]`
// tensor, rank r's shard is its experts stacked in that order.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LAYOUT_EXPERTPLACEMENT_H
#define UCP_LAYOUT_EXPERTPLACEMENT_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// The descriptor: `experts[r]` lists rank r's global expert ids in local
/// order.
struct ExpertPlacement {
  int64_t numExperts = 0;
  int64_t epSize = 0;
  std::vector<std::vector<int64_t>> experts;
};

/// The legacy uniform layout: rank r holds experts [r*n, (r+1)*n). Requires
/// n * epSize == numExperts.
llvm::Expected<ExpertPlacement> getUniformExpertPlacement(int64_t numExperts,
                                                          int64_t localExperts,
                                                          int64_t epSize);

/// Checks the descriptor's rules: positive sizes, one entry per rank, ids
/// in range and unique within a rank, every id held by some rank.
llvm::Error validateExpertPlacement(const ExpertPlacement &placement);

/// Returns the canonical map of `placement` over the tensor
/// `[numExperts, expertShape...]`.
llvm::Expected<ParamMap> buildExpertLayout(llvm::StringRef name,
                                           const ExpertPlacement &placement,
                                           llvm::ArrayRef<int64_t> expertShape);

} // namespace ucp

#endif // UCP_LAYOUT_EXPERTPLACEMENT_H

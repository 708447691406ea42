//===- ScaleCheck.cpp - Scales that fit the element type ------------------===//

#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include <cmath>

using namespace ucp;

llvm::Error ucp::checkScalesFit(const ParamMap &map, DType type,
                                int scalePower) {
  for (const Shard &shard : map.shards)
    for (auto [i, piece] : llvm::enumerate(shard.pieces)) {
      if (piece.scale == 1.0)
        continue;
      double applied = std::pow(piece.scale, scalePower);
      if (isRepresentableFactor(type, applied) &&
          isRepresentableFactor(type, 1.0 / applied))
        continue;
      std::string power =
          scalePower == 1
              ? ""
              : " (to the power " + std::to_string(scalePower) + ")";
      return makeError(
          "parameter '" + map.name + "': rank " + std::to_string(shard.rank) +
          " piece #" + std::to_string(i) + " has scale " +
          formatScale(piece.scale) + power + ", but " +
          getSafetensorsName(type) +
          (isFloatingPoint(type) ? " elements take factors of magnitude " +
                                       describeFactorRange(type) +
                                       " only, the scale and its inverse both"
                                 : std::string(" elements cannot be scaled")));
    }
  return llvm::Error::success();
}

//===- Invariants.cpp - The local invariants of maps ----------------------===//

#include "ucp/Map/Invariants.h"
#include "ucp/Map/Indexing.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace ucp;
using llvm::ArrayRef;

static std::string checkNonNegative(ArrayRef<int64_t> values,
                                    const std::string &what) {
  for (auto [dim, value] : llvm::enumerate(values)) {
    if (value < 0)
      return what + " " + std::to_string(value) + " in dimension " +
             std::to_string(dim) + " must be non-negative";
  }
  return {};
}

std::string ucp::checkLocationCount(int64_t entries) {
  if (entries <= kMaxMapLocations)
    return {};
  return "the map would list " + std::to_string(entries) +
         " locations over its pieces (each holder of a replicated block "
         "lists every holder), more than the " +
         std::to_string(kMaxMapLocations) + " a map may hold";
}

std::string ucp::checkWorldSize(int64_t worldSize, llvm::StringRef what) {
  if (worldSize < 1)
    return what.str() + " must be positive, got " + std::to_string(worldSize);
  if (worldSize > kMaxWorldSize)
    return what.str() + " " + std::to_string(worldSize) +
           " is beyond the most ranks supported, " +
           std::to_string(kMaxWorldSize);
  return {};
}

std::string ucp::checkParamHeader(ArrayRef<int64_t> logicalShape,
                                  int64_t worldSize,
                                  std::optional<int64_t> originalVocabSize) {
  if (std::string error = checkWorldSize(worldSize); !error.empty())
    return error;
  if (std::string error = checkNonNegative(logicalShape, "logical extent");
      !error.empty())
    return error;
  if (!getNumElements(logicalShape))
    return "logical shape " + formatList(logicalShape) +
           " has more elements than int64 can count";
  if (!hasRowMajorStrides(logicalShape))
    return "logical shape " + formatList(logicalShape) +
           " has row-major strides beyond int64";
  if (originalVocabSize) {
    if (logicalShape.empty())
      return "a scalar parameter has no vocabulary rows";
    if (*originalVocabSize < 0 || *originalVocabSize > logicalShape[0])
      return "original vocabulary size " + std::to_string(*originalVocabSize) +
             " must lie in [0, " + std::to_string(logicalShape[0]) +
             "], the rows of F";
  }
  return {};
}

std::string ucp::checkShardHeader(int64_t rank, ArrayRef<int64_t> shardShape,
                                  int64_t worldSize) {
  if (rank < 0 || rank >= worldSize)
    return "rank " + std::to_string(rank) + " is outside the world [0, " +
           std::to_string(worldSize) + ")";
  if (std::string error = checkNonNegative(shardShape, "shard extent");
      !error.empty())
    return error;
  if (!getNumElements(shardShape))
    return "shard shape " + formatList(shardShape) +
           " has more elements than int64 can count";
  if (!hasRowMajorStrides(shardShape))
    return "shard shape " + formatList(shardShape) +
           " has row-major strides beyond int64";
  return {};
}

/// Checks that a non-empty view of `shape` stays inside a buffer of
/// `bufferElements` elements.
static std::string checkViewInBounds(ArrayRef<int64_t> shape,
                                     const StridedView &view,
                                     int64_t bufferElements,
                                     const std::string &side,
                                     const std::string &buffer) {
  std::optional<int64_t> last = getLastOffset(shape, view);
  if (!last)
    return side + " view overflows int64";
  if (*last >= bufferElements) {
    // Strides are non-negative, so the farthest element is the last one.
    Extents lastIndex;
    for (int64_t extent : shape)
      lastIndex.push_back(extent - 1);
    return side + " view element " + formatList(lastIndex) +
           " lands at offset " + std::to_string(*last) + " of " + buffer +
           ", which has " + std::to_string(bufferElements) + " elements";
  }
  return {};
}

std::string ucp::checkViews(ArrayRef<int64_t> shape,
                            ArrayRef<ViewInBuffer> views) {
  for (const ViewInBuffer &v : views) {
    if (v.view->strides.size() != shape.size())
      return std::string(v.side) + " strides " + formatList(v.view->strides) +
             " have " + std::to_string(v.view->strides.size()) +
             " entries but the shape " + formatList(shape) + " has " +
             std::to_string(shape.size());
  }
  if (std::string e = checkNonNegative(shape, "extent"); !e.empty())
    return e;
  for (const ViewInBuffer &v : views) {
    if (std::string e =
            checkNonNegative(v.view->strides, std::string(v.side) + " stride");
        !e.empty())
      return e;
  }
  for (const ViewInBuffer &v : views) {
    if (v.view->offset < 0)
      return std::string(v.side) + " offset " + std::to_string(v.view->offset) +
             " must be non-negative";
  }
  std::optional<int64_t> elements = getNumElements(shape);
  if (!elements)
    return "shape " + formatList(shape) +
           " has more elements than int64 can count";
  // An empty view covers nothing; DeepSpeed places such pieces at offset
  // numel, so only non-empty views are bounds-checked.
  if (*elements > 0) {
    for (const ViewInBuffer &v : views) {
      if (std::string e = checkViewInBounds(shape, *v.view, v.bufferElements,
                                            v.side, v.buffer);
          !e.empty())
        return e;
    }
  }
  return {};
}

std::string ucp::checkPiece(const Piece &piece, ArrayRef<int64_t> logicalShape,
                            ArrayRef<int64_t> shardShape, int64_t rank,
                            int64_t worldSize) {
  int64_t fElements = getNumElements(logicalShape).value_or(0);
  int64_t shardElements = getNumElements(shardShape).value_or(0);
  if (std::string e = checkViews(
          piece.shape, {{&piece.source, fElements, "source", "F"},
                        {&piece.dest, shardElements, "dest", "the shard"}});
      !e.empty())
    return e;

  if (piece.locations.empty())
    return "locations must name at least the rank " + std::to_string(rank) +
           " that lists the piece";
  for (size_t i = 1; i < piece.locations.size(); ++i) {
    if (piece.locations[i - 1] >= piece.locations[i])
      return "locations " + formatList(piece.locations) +
             " must be sorted and unique";
  }
  for (int64_t location : piece.locations) {
    if (location < 0 || location >= worldSize)
      return "location " + std::to_string(location) +
             " is outside the world [0, " + std::to_string(worldSize) + ")";
  }
  if (!llvm::is_contained(piece.locations, rank))
    return "locations " + formatList(piece.locations) +
           " do not include the rank " + std::to_string(rank) +
           " that lists the piece";
  if (!std::isfinite(piece.scale) || piece.scale == 0.0)
    return "scale must be finite and non-zero, got " + formatScale(piece.scale);
  // The map must be invertible: rebuilding divides by the scale.
  if (!std::isfinite(1.0 / piece.scale))
    return "scale " + formatScale(piece.scale) +
           " has no finite inverse, so no shard could be rebuilt";
  return {};
}

std::string ucp::checkMapInvariants(const ParamMap &map) {
  if (std::string error = checkParamHeader(map.logicalShape, map.worldSize,
                                           map.originalVocabSize);
      !error.empty())
    return error;
  for (const Shard &shard : map.shards) {
    std::string rank = "rank " + std::to_string(shard.rank);
    if (std::string error =
            checkShardHeader(shard.rank, shard.shape, map.worldSize);
        !error.empty())
      return rank + ": " + error;
    for (auto [i, piece] : llvm::enumerate(shard.pieces))
      if (std::string error = checkPiece(piece, map.logicalShape, shard.shape,
                                         shard.rank, map.worldSize);
          !error.empty())
        return rank + " piece #" + std::to_string(i) + ": " + error;
  }
  return "";
}

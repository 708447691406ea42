//===- GeneratedAffineMap.cpp - The maps a checkpoint may carry ------------===//
//
// universal_checkpoint_info's `affine_map`, as DeepSpeed's layers that
// publish one write it (the to_dict form of deepspeed.checkpoint.affine):
// every parameter of the model keyed by its exact pattern, each TP rank's
// shard shape and one piece per rank (an even split along its dimension,
// or the whole tensor on every rank), rank keys as ints. Written from the
// generator's own model, not by the product's layout library, so a reader
// that takes it is checked against an independent description.
//
//===----------------------------------------------------------------------===//

#include "GeneratedModel.h"
#include "ucp/Formats/Json/MapDocument.h"

using namespace ucp;
using namespace ucp::generator;

/// Row-major strides of `shape`.
static Extents getStrides(const Extents &shape) {
  Extents strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// Rank `rank`'s piece of `param` split over `tp` ranks.
static PickleRef buildPiece(PickleBuilder &b, const Param &param, int64_t tp,
                            int64_t rank) {
  auto ints = [&](const Extents &values) {
    std::vector<PickleRef> items;
    for (int64_t value : values)
      items.push_back(b.integer(value));
    return b.list(items);
  };
  auto view = [&](int64_t offset, const Extents &strides) {
    return b.list({b.integer(offset), ints(strides)});
  };
  Extents shape = param.fullShape, fullStrides = getStrides(param.fullShape);
  int64_t offset = 0;
  Extents locations;
  if (param.splitDim < 0) {
    for (int64_t r = 0; r < tp; ++r)
      locations.push_back(r);
  } else {
    shape[param.splitDim] /= tp;
    offset = rank * shape[param.splitDim] * fullStrides[param.splitDim];
    locations.push_back(rank);
  }
  auto s = [&](llvm::StringRef text) { return b.string(text); };
  return b.dict({{s("shape"), ints(shape)},
                 {s("source"), view(offset, fullStrides)},
                 {s("dest"), view(0, getStrides(shape))},
                 {s("locations"), ints(locations)}});
}

PickleRef ucp::generator::buildAffineMapDocument(PickleBuilder &b,
                                                 const Model &model,
                                                 int64_t tp) {
  auto s = [&](llvm::StringRef text) { return b.string(text); };
  std::vector<std::pair<PickleRef, PickleRef>> params;
  for (const Param &param : model.params) {
    std::vector<std::pair<PickleRef, PickleRef>> ranks;
    for (int64_t rank = 0; rank < tp; ++rank) {
      Extents shard = param.fullShape;
      if (param.splitDim >= 0)
        shard[param.splitDim] /= tp;
      std::vector<PickleRef> extents;
      for (int64_t extent : shard)
        extents.push_back(b.integer(extent));
      ranks.push_back(
          {b.integer(rank),
           b.dict({{s("shard_shape"), b.list(extents)},
                   {s("pieces"), b.list({buildPiece(b, param, tp, rank)})}})});
    }
    std::vector<PickleRef> logical;
    for (int64_t extent : param.fullShape)
      logical.push_back(b.integer(extent));
    params.push_back({s(getParamPattern(param.name)),
                      b.dict({{s("logical_shape"), b.list(logical)},
                              {s("ranks"), b.dict(ranks)}})});
  }
  return b.dict({{s("version"), b.integer(1)}, {s("params"), b.dict(params)}});
}

//===- ZeroFlattening.cpp - Where ZeRO puts a group's parameters ----------===//

#include "ucp/DeepSpeed/ZeroFlattening.h"
#include "ucp/Layout/NestedLayout.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/MathExtras.h"

using namespace ucp;

ZeroGroupLayout ucp::layOutZeroGroup(llvm::ArrayRef<int64_t> elements,
                                     int64_t dp, int stage) {
  ZeroGroupLayout layout;
  layout.dp = dp;
  layout.perParameter = stage == 3;
  int64_t offset = 0;
  for (int64_t count : elements) {
    layout.offsets.push_back(offset);
    layout.elements.push_back(count);
    layout.total += count;
    offset += layout.perParameter ? llvm::divideCeil(count, dp) : count;
  }
  layout.partition = layout.perParameter
                         ? offset
                         : int64_t(llvm::alignTo(layout.total, 2 * dp)) / dp;
  return layout;
}

int64_t ZeroGroupLayout::getPadding(int64_t rank) const {
  if (perParameter) {
    int64_t real = 0;
    for (size_t param = 0; param < elements.size(); ++param)
      real += getSlice(param, rank).count;
    return partition - real;
  }
  int64_t begin = rank * partition;
  return std::clamp<int64_t>(begin + partition - std::max(total, begin), 0,
                             partition);
}

FragmentSlice ZeroGroupLayout::getSlice(size_t param, int64_t rank) const {
  if (perParameter) {
    int64_t slots = llvm::divideCeil(elements[param], dp);
    int64_t count =
        std::clamp<int64_t>(elements[param] - rank * slots, 0, slots);
    return count ? FragmentSlice{offsets[param], count} : FragmentSlice{};
  }
  int64_t begin = rank * partition;
  int64_t lo = std::max(begin, offsets[param]);
  int64_t hi = std::min(begin + partition, offsets[param] + elements[param]);
  if (lo >= hi)
    return {0, 0};
  return {lo - begin, hi - lo};
}

llvm::Expected<ParamMap> ucp::nestZero3Slots(const ParamMap &tpMap,
                                             int64_t dp) {
  std::vector<ParamMap> inner;
  for (int64_t t = 0; t < tpMap.worldSize; ++t) {
    auto shard = llvm::find_if(tpMap.shards,
                               [&](const Shard &s) { return s.rank == t; });
    if (shard == tpMap.shards.end())
      return makeError("parameter '" + tpMap.name + "': TP rank " +
                       std::to_string(t) + " would hold nothing");
    ZeroGroupLayout layout =
        layOutZeroGroup({*getNumElements(shard->shape)}, dp, /*stage=*/3);
    std::vector<int64_t> sizes;
    for (int64_t d = 0; d < dp; ++d)
      sizes.push_back(layout.getSlice(0, d).count);
    llvm::Expected<ParamMap> cut =
        buildFlatRangeLayout(tpMap.name, shard->shape, sizes);
    if (!cut)
      return cut.takeError();
    inner.push_back(std::move(*cut));
  }
  return nestShardMaps(tpMap, inner);
}

//===- ZeroFlattening.cpp - Where ZeRO-1/2 puts a group's parameters ------===//

#include "ucp/IO/ZeroFlattening.h"

#include "llvm/Support/MathExtras.h"

using namespace ucp;

ZeroGroupLayout ucp::layOutZeroGroup(llvm::ArrayRef<int64_t> elements,
                                     int64_t dp) {
  ZeroGroupLayout layout;
  layout.dp = dp;
  for (int64_t count : elements) {
    layout.offsets.push_back(layout.total);
    layout.elements.push_back(count);
    layout.total += count;
  }
  layout.partition = llvm::alignTo(layout.total, 2 * dp) / dp;
  return layout;
}

int64_t ZeroGroupLayout::getPadding(int64_t rank) const {
  int64_t begin = rank * partition;
  return std::clamp<int64_t>(begin + partition - std::max(total, begin), 0,
                             partition);
}

FragmentSlice ZeroGroupLayout::getSlice(size_t param, int64_t rank) const {
  int64_t begin = rank * partition;
  int64_t lo = std::max(begin, offsets[param]);
  int64_t hi = std::min(begin + partition, offsets[param] + elements[param]);
  if (lo >= hi)
    return {0, 0};
  return {lo - begin, hi - lo};
}

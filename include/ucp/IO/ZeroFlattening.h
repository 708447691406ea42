//===- ZeroFlattening.h - Where ZeRO-1/2 puts a group's parameters -*- C++
//-*-===//
//
// ZeRO-1/2 concatenates the parameters of an optimizer parameter group in
// order into one flat buffer, pads it to a multiple of `2 x dp` elements
// (nccl_start_alignment_factor 2, whatever the dtype) and cuts it into `dp`
// equal partitions; a parameter may straddle two or more partitions. The
// writers of ZeRO checkpoints lay groups out with it; the reader checks the
// records of real ones against the same placement.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_IO_ZEROFLATTENING_H
#define UCP_IO_ZEROFLATTENING_H

#include "ucp/IO/DeepSpeedCheckpoint.h"

namespace ucp {

/// One parameter group flattened for `dp` ranks.
struct ZeroGroupLayout {
  int64_t dp = 1;
  /// Elements of each rank's partition (the padded length / dp).
  int64_t partition = 0;
  /// Each parameter's first element in the flat buffer, and its elements.
  std::vector<int64_t> offsets, elements;
  /// The real elements (the flat buffer's unpadded length).
  int64_t total = 0;

  /// The padded length of the flat buffer.
  int64_t getPaddedLength() const { return partition * dp; }
  /// The padding elements at the end of rank `rank`'s partition.
  int64_t getPadding(int64_t rank) const;
  /// Parameter `param`'s fragment on rank `rank`: its offset in the
  /// partition and its elements (none where they do not meet).
  FragmentSlice getSlice(size_t param, int64_t rank) const;
};

/// Lays out a group of parameters of `elements` each for `dp` ranks.
ZeroGroupLayout layOutZeroGroup(llvm::ArrayRef<int64_t> elements, int64_t dp);

} // namespace ucp

#endif // UCP_IO_ZEROFLATTENING_H

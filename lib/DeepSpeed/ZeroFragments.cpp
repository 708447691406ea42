//===- ZeroFragments.cpp - Where ZeRO puts each rank's fragments ----------===//
//
// ZeRO-1/2 concatenates a parameter group's parameters in order into one
// flat buffer, pads it, and gives each DP rank an equal partition; a
// parameter may straddle partitions. DeepSpeed records each rank's part as
// `fragment_address(numel, start)` (start within the partition); the
// flattening recomputed from param_shapes must agree with every record.
// ZeRO-3 pads every parameter alone to `ceil(numel / dp)` slots per rank.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/DeepSpeed/ZeroFlattening.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/MathExtras.h"

using namespace ucp;
using llvm::Expected;

/// The names of the states, as the optimizer files hold them.
static const char *const kPartitionNames[] = {
    "the rank's fp32 partition", "the rank's exp_avg partition",
    "the rank's exp_avg_sq partition"};

using Placement = std::vector<std::vector<FragmentSlice>>;

/// ZeRO-1/2: checks each rank's slices against the group's flattening.
static Expected<Placement>
placeFlattened(llvm::ArrayRef<GroupParam> params,
               llvm::ArrayRef<const RankGroup *> ranks,
               llvm::ArrayRef<std::string> files) {
  int64_t dp = ranks.size();
  int64_t total = 0;
  std::vector<int64_t> elements;
  for (const GroupParam &param : params) {
    elements.push_back(param.elements);
    if (llvm::AddOverflow(total, param.elements, total))
      return makeError(files[0], "a parameter group of more elements than "
                                 "int64 holds");
  }
  // The moments keep the padding the fp32 partitions drop; without them
  // (saved before the first step) the flattening says how long each is.
  int64_t partition = ranks.front()->moments
                          ? ranks.front()->lengths[1]
                          : layOutZeroGroup(elements, dp, 2).partition;
  int64_t capacity = 0;
  if (llvm::MulOverflow(partition, dp, capacity) || capacity < total)
    return makeError(files[0], "partitions of " + std::to_string(partition) +
                                   " elements on " + std::to_string(dp) +
                                   " ranks cannot hold the group's " +
                                   std::to_string(total));
  Placement placement(params.size(), std::vector<FragmentSlice>(dp));
  for (int64_t d = 0; d < dp; ++d) {
    const RankGroup &rank = *ranks[d];
    if (rank.moments && rank.lengths[1] != partition)
      return makeError(
          files[d], "its partitions hold " + std::to_string(rank.lengths[1]) +
                        " elements, rank 0's " + std::to_string(partition));
    // The records, in order, against the parameters meeting the partition.
    size_t record = 0;
    int64_t offset = 0, begin = d * partition, end = begin + partition;
    for (auto [index, param] : llvm::enumerate(params)) {
      int64_t from = std::max(offset, begin);
      int64_t to = std::min(offset + param.elements, end);
      offset += param.elements;
      if (from >= to)
        continue;
      std::pair<int64_t, int64_t> want{to - from, from - begin};
      if (record == rank.slices.size() ||
          rank.slices[record].first != param.name)
        return makeError(
            files[d],
            "parameter '" + param.name + "': param_slice_mappings lacks its " +
                std::to_string(want.first) + " elements at " +
                std::to_string(want.second) + " of this rank's partition");
      auto [count, start] = rank.slices[record].second;
      if (std::pair{count, start} != want)
        return makeError(files[d],
                         "parameter '" + param.name +
                             "': param_slice_mappings gives fragment_address(" +
                             "numel=" + std::to_string(count) +
                             ", start=" + std::to_string(start) +
                             "), but the group's flattening (partitions of " +
                             std::to_string(partition) + " elements) puts " +
                             std::to_string(want.first) + " elements at " +
                             std::to_string(want.second) + " on this rank");
      placement[index][d] = {start, count};
      ++record;
    }
    if (record != rank.slices.size())
      return makeError(files[d], "param_slice_mappings lists '" +
                                     rank.slices[record].first +
                                     "', which the group's flattening does not "
                                     "place on this rank");
  }
  return placement;
}

/// ZeRO-3: every parameter in `ceil(elements / dp)` slots per rank.
static Placement placeSlots(llvm::ArrayRef<GroupParam> params, int64_t dp) {
  std::vector<int64_t> elements;
  for (const GroupParam &param : params)
    elements.push_back(param.elements);
  ZeroGroupLayout layout = layOutZeroGroup(elements, dp, /*stage=*/3);
  Placement placement(params.size());
  for (size_t index = 0; index < params.size(); ++index)
    for (int64_t d = 0; d < dp; ++d)
      placement[index].push_back(layout.getSlice(index, d));
  return placement;
}

Expected<Placement> ucp::placeFragments(llvm::ArrayRef<GroupParam> params,
                                        llvm::ArrayRef<const RankGroup *> ranks,
                                        llvm::ArrayRef<std::string> files,
                                        bool zero3) {
  Expected<Placement> placement = zero3 ? placeSlots(params, ranks.size())
                                        : placeFlattened(params, ranks, files);
  if (!placement)
    return placement.takeError();
  // Every fragment lies inside each of its rank's partitions.
  for (auto [index, param] : llvm::enumerate(params))
    for (size_t d = 0; d < ranks.size(); ++d) {
      const FragmentSlice &slice = (*placement)[index][d];
      for (size_t state = 0; state < (ranks[d]->moments ? 3 : 1); ++state)
        if (slice.count > 0 &&
            slice.offset + slice.count > ranks[d]->lengths[state])
          return makeError(
              files[d],
              "parameter '" + param.name + "': its fragment ends at element " +
                  std::to_string(slice.offset + slice.count) + ", past the " +
                  std::to_string(ranks[d]->lengths[state]) + " elements of " +
                  kPartitionNames[state]);
    }
  return placement;
}

//===- OpenReads.h - What opening a checkpoint read already ----*- C++ -*-===//
//
// A reader that checks a checkpoint as it opens it reads some of its bytes
// whole (DeepSpeed's reader compares every module weight with its fp32
// master). Asked to, it keeps what `check` would otherwise learn by
// reading those bytes again: the CRC-32s of the file ranges, and the value
// scans of whole shards. `check` then reads each byte of a checkpoint once.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CHECKPOINT_OPENREADS_H
#define UCP_CHECKPOINT_OPENREADS_H

#include "ucp/Checkpoint/ValueCheck.h"
#include "ucp/Support/Crc32.h"

#include <map>
#include <mutex>
#include <optional>
#include <tuple>

namespace ucp {

/// The CRC-32s and value scans of the bytes a reader read while opening.
/// Safe to add to from several threads.
class OpenReads {
public:
  /// The CRC-32s of the file ranges read.
  RangeCrcs crcs;

  /// Records `scan`, of all of shard `rank` of `state` of tensor `index`.
  void addScan(size_t index, TensorState state, int64_t rank,
               const ValueScan &scan);
  /// The scan of that whole shard, if one was recorded.
  std::optional<ValueScan> findScan(size_t index, TensorState state,
                                    int64_t rank) const;

private:
  mutable std::mutex mutex;
  std::map<std::tuple<size_t, TensorState, int64_t>, ValueScan> scans;
};

} // namespace ucp

#endif // UCP_CHECKPOINT_OPENREADS_H

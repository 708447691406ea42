//===- Invariants.h - What a checkpoint's data must satisfy -----*- C++ -*-===//
//
// The invariants of a checkpoint's bytes that no map states alone: every
// replica of a block holds the same bytes (P2), and every scale a map
// applies is a factor its tensors' element type can take. Every job that
// moves data checks them before writing, whatever the format.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CHECKPOINT_INVARIANTS_H
#define UCP_CHECKPOINT_INVARIANTS_H

#include "ucp/Element/DType.h"
#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

#include <map>
#include <optional>

namespace ucp {

/// Two holders of a replicated element of F that hold different bytes.
struct ReplicaMismatch {
  int64_t first = 0, second = 0;
  Extents element;
};

/// The first element replicated in `map` whose holders hold different
/// bytes (`shards` gives each rank's shard data), if one does.
llvm::Expected<std::optional<ReplicaMismatch>>
findReplicaMismatch(const ParamMap &map,
                    const std::map<int64_t, const char *> &shards,
                    int64_t elementSize);

/// Checks that every block replicated in `map` holds the same bytes on all
/// its holders (P2); `shards` gives each rank's shard data.
llvm::Error checkReplicas(const ParamMap &map,
                          const std::map<int64_t, const char *> &shards,
                          int64_t elementSize);

/// Refuses a piece of `map` whose scale, raised to `scalePower`, or its
/// inverse is a factor elements of `type` cannot take, naming the
/// parameter, rank and piece: extract multiplies by the one, rebuild by the
/// other, and 1e-300 on F32 would give zeros one way and infinities the
/// other.
llvm::Error checkScalesFit(const ParamMap &map, DType type, int scalePower);

} // namespace ucp

#endif // UCP_CHECKPOINT_INVARIANTS_H

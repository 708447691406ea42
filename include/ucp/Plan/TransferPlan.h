//===- TransferPlan.h - Plans that move shards between layouts --*- C++ -*-===//
//
// A transfer plan (spec §2.3, M_t o M_s^-1) says how to fill every target
// shard from the source shards without building F: strided copies between
// a source shard and a target shard, each optionally scaled, plus fills for
// target elements no source holds (vocabulary padding). Offsets and strides
// are in elements of the shards, as in DeepSpeed's phase-2 segments.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_PLAN_TRANSFERPLAN_H
#define UCP_PLAN_TRANSFERPLAN_H

#include "ucp/Map/ParamMap.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <map>
#include <optional>

namespace ucp {

/// A strided copy `target[view] = source[view] * scale`.
struct Segment {
  Extents shape;
  int64_t sourceRank = 0;
  StridedView source;
  int64_t targetRank = 0;
  StridedView target;
  /// s_target / s_source: the factor between what the two shards hold.
  double scale = 1.0;

  bool operator==(const Segment &o) const {
    return shape == o.shape && sourceRank == o.sourceRank &&
           source == o.source && targetRank == o.targetRank &&
           target == o.target && scale == o.scale;
  }
};

/// Target elements no source holds; the executor initialises them.
struct Fill {
  int64_t rank = 0;
  Extents shape;
  StridedView target;

  bool operator==(const Fill &o) const {
    return rank == o.rank && shape == o.shape && target == o.target;
  }
};

/// The plan of one parameter.
struct TransferPlan {
  std::string name;
  int64_t sourceWorld = 1;
  int64_t targetWorld = 1;
  /// The shard shape of every source and target rank that has one.
  std::map<int64_t, Extents> sourceShards;
  std::map<int64_t, Extents> targetShards;
  /// Ordered by target rank, then target offset.
  std::vector<Segment> segments;
  std::vector<Fill> fills;
};

/// How the planner picks one of several ranks holding the same data.
struct ReplicaPolicy {
  enum Kind {
    /// The lowest holder.
    Lowest,
    /// The holder whose rank equals the target rank, else the lowest.
    Local,
    /// As Local, then a holder on the target rank's node (ranks r and t
    /// share a node when r / ranksPerNode == t / ranksPerNode), else the
    /// lowest.
    Node,
    /// The holder that has sent the fewest elements so far in this plan
    /// (ties to the lowest).
    Balance,
  } kind = Local;
  int64_t ranksPerNode = 8;
  /// The process holding each source and each target rank's shard (by
  /// rank) when a transfer spans processes (ucp/Distributed). Local and
  /// Node then prefer a holder in the target's own process, and Balance
  /// balances the elements each process sends to other processes, a holder
  /// in the target's process sending for free. Empty: every rank is a
  /// process of its own, and a source rank is local to the target rank of
  /// the same number.
  std::vector<int64_t> sourceProcesses, targetProcesses;

  /// Whether the policy names the processes of a distributed transfer.
  bool isDistributed() const { return !sourceProcesses.empty(); }
  /// The process of source rank `rank` (the rank itself if none is named).
  int64_t getSourceProcess(int64_t rank) const {
    return rank < static_cast<int64_t>(sourceProcesses.size())
               ? sourceProcesses[rank]
               : rank;
  }
  /// The process of target rank `rank` (the rank itself if none is named).
  int64_t getTargetProcess(int64_t rank) const {
    return rank < static_cast<int64_t>(targetProcesses.size())
               ? targetProcesses[rank]
               : rank;
  }
};

/// The policy kind named `name` (lowest, local, node or balance), if it is
/// one.
std::optional<ReplicaPolicy::Kind> parseReplicaPolicyKind(llvm::StringRef name);
/// The name parseReplicaPolicyKind reads as `kind`.
llvm::StringRef getReplicaPolicyName(ReplicaPolicy::Kind kind);

//===----------------------------------------------------------------------===//
// Local invariants of plans (shared by the plan ops and the importers)
//===----------------------------------------------------------------------===//

/// Checks a copy's views against its shards' shapes and its scale.
std::string checkSegment(const Segment &segment,
                         llvm::ArrayRef<int64_t> sourceShard,
                         llvm::ArrayRef<int64_t> targetShard);

/// Checks a fill's view against its shard's shape.
std::string checkFill(const Fill &fill, llvm::ArrayRef<int64_t> targetShard);

/// One write of a plan: the copy `segments[index]` or the fill
/// `fills[index]`.
struct PlanWrite {
  bool isFill = false;
  size_t index = 0;
};

/// Why a plan's writes do not tile one of its target shards.
struct PlanTilingError {
  /// The target rank.
  int64_t rank = 0;
  /// "target rank R: element [..] of its shard is written by ...", the
  /// writes named as the caller's `nameWrite` names them.
  std::string message;
  /// The write at fault (the later of two writes of one element, a write
  /// too irregular to check, or one into a rank with no shard), if any,
  /// and for an element written twice the earlier write.
  std::optional<PlanWrite> write, other;
};

/// Checks that the copies and fills of every target rank write every
/// element of its shard exactly once. Returns nothing when they do, else
/// the lowest failing rank, the first element it writes twice or never
/// and the writes involved, named in the message by `nameWrite` (each
/// reader numbers them its own way: per shard in IR, per list in JSON).
/// Costs O(n log n) in the writes of the whole plan.
std::optional<PlanTilingError>
checkPlanTiling(const TransferPlan &plan,
                llvm::function_ref<std::string(PlanWrite)> nameWrite);

} // namespace ucp

#endif // UCP_PLAN_TRANSFERPLAN_H

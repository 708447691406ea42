//===- ValueCheck.h - The values a checkpoint's states may hold --*- C++ -*-===//
//
// Masters and Adam's moments must be finite, and a second moment never
// negative: a NaN there is a run that diverged or a file that rotted, and
// resuming from it silently trains on garbage. A weight's NaN or Inf is
// worth reporting but not fatal (a frozen buffer may hold Inf on purpose).
// `affine-run check` lists every such shard; every job that reads masters
// and moments refuses them before writing, unless told not to.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CHECKPOINT_VALUECHECK_H
#define UCP_CHECKPOINT_VALUECHECK_H

#include "ucp/Checkpoint/CheckpointModel.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>

namespace ucp {

/// Values of one shard that its state may not hold: `count` elements that
/// are NaN or infinite, or (`negative`) below zero, the first at element
/// `first` of the shard.
struct ValueProblem {
  int64_t rank = 0;
  int64_t first = 0;
  int64_t count = 0;
  bool negative = false;
};

/// The problems of the `elements` values of `type` at `data`, shard `rank`
/// of `state`: non-finite values of any state, negative ones of exp_avg_sq.
/// Types that cannot hold NaN (integers) have none. Runs at memory speed.
llvm::SmallVector<ValueProblem, 2>
findValueProblems(TensorState state, DType type, int64_t rank,
                  const char *data, int64_t elements);

/// findValueProblems of a shard read a chunk at a time (a pass that reads
/// each byte of a file once): the chunks' counts added, the first of each
/// kind kept, as one call on the whole shard would find them.
class ValueScan {
public:
  ValueScan(TensorState state, DType type, int64_t rank)
      : state(state), type(type), rank(rank) {}
  /// Scans the shard's next `elements` values, at `data`.
  void add(const char *data, int64_t elements);
  /// Adds what `next`, the scan of the values that follow, found (scans of
  /// consecutive parts of a shard, run in parallel, joined in order).
  void append(const ValueScan &next);
  /// What the chunks added so far hold.
  llvm::SmallVector<ValueProblem, 2> getProblems() const;

private:
  TensorState state;
  DType type;
  int64_t rank;
  int64_t scanned = 0;
  int64_t nonFinite = 0, negative = 0;
  int64_t firstNonFinite = -1, firstNegative = -1;
};

/// The element of F that shard `rank`'s element `offset` holds, if a piece
/// of `map` places one there.
std::optional<Extents> locateElement(const ParamMap &map, int64_t rank,
                                     int64_t offset);

/// `problem` in one line: the file, the tensor and state, the rank, how
/// many of the shard's elements, and the first as an element of F with its
/// value. `data` is the shard's.
std::string describeValueProblem(const ParamMap &map, TensorState state,
                                 DType type, const ValueProblem &problem,
                                 llvm::StringRef file, const char *data);

/// Whether a value problem of `state` makes a checkpoint unsound: always
/// for masters and moments and for negatives; for weights only if
/// `nonFiniteWeightsFatal`.
bool isFatal(TensorState state, const ValueProblem &problem,
             bool nonFiniteWeightsFatal);

/// What a job checks of the masters and moments it reads: refuses the
/// first problem of `shards` (each rank's shard of `state` of `map`'s
/// tensor, of `type`), scanned in parallel, naming its file as `fileOf`
/// names rank files. Weights are not checked (their problems are not
/// fatal).
llvm::Error checkStateValues(const ParamMap &map, TensorState state,
                             DType type,
                             const std::map<int64_t, const char *> &shards,
                             llvm::function_ref<std::string(int64_t)> fileOf);

} // namespace ucp

#endif // UCP_CHECKPOINT_VALUECHECK_H

//===- ProcessGroup.h - The processes of a job, as an executor --*- C++ -*-===//
//
// A job that spans several processes (ucp/Distributed implements it over
// MPI and NCCL) runs every step of the single-process job in each process:
// each opens the source files and writes the target files of the ranks it
// holds, the programs run collectively (what crosses processes travels
// between them), and every other step is followed by an agreement, so that
// all processes fail together, before any output takes its name, when one
// fails.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_PROCESSGROUP_H
#define UCP_ENGINE_PROCESSGROUP_H

#include "ucp/Engine/Executor.h"

#include <functional>
#include <optional>
#include <vector>

namespace ucp {

/// A job's progress on one process, or summed over a group: units (files,
/// tensors) done and in all, and bytes written or read.
struct ProgressCounts {
  int64_t done = 0, total = 0, bytes = 0;
  bool operator==(const ProgressCounts &other) const {
    return done == other.done && total == other.total && bytes == other.bytes;
  }
  bool operator!=(const ProgressCounts &other) const {
    return !(*this == other);
  }
};

/// The processes of a job, and the executor that runs its programs across
/// them.
class ProcessGroup : public Executor {
public:
  ~ProcessGroup() override;

  /// This process's number, 0 for the one that reports progress.
  virtual int getProcess() const = 0;
  /// How many processes the group has.
  virtual int getProcessCount() const = 0;
  /// For tests: a job marks each output it has written, and a process told
  /// to fail at that point dies or hangs there.
  virtual void markOutputWritten() {}
  /// Whether this process holds source (target) rank `rank`.
  virtual bool holdsSource(int64_t rank) const = 0;
  virtual bool holdsTarget(int64_t rank) const = 0;
  /// Collective: success when every process passes success; else an error
  /// on every process, its own where it failed, the first failing
  /// process's otherwise.
  virtual llvm::Error agree(llvm::Error local) = 0;
  /// Collective: `values` becomes their element-wise maximum (sum) over
  /// the processes.
  enum class Reduction { Max, Sum };
  virtual llvm::Error reduce(std::vector<int64_t> &values,
                             Reduction reduction) = 0;
  /// Collective: `bytes` of every process become process `root`'s.
  virtual llvm::Error broadcast(llvm::MutableArrayRef<char> bytes,
                                int root) = 0;
  /// The most target bytes one call of execute should move: what the
  /// processes hold in message buffers at once.
  int64_t getBatchBytes() const override = 0;

  /// The progress of a job the group shares. Every process passes its own
  /// counts as they grow (on the thread that calls the group's
  /// collectives; never blocks). Process 0 gets back the group's totals
  /// as last heard, once every process has been heard from; the others get
  /// nothing. This base class relays nothing: process 0 gets its own.
  virtual std::optional<ProgressCounts> shareProgress(ProgressCounts own);
  /// Process 0: while it waits for the others inside a collective, the
  /// group calls `report` with its totals about once a second (empty:
  /// never). A group that relays nothing never calls it.
  virtual void setWaitingReport(std::function<void(ProgressCounts)> report);
  /// Collective, after a job: every process's last counts `own` reach
  /// process 0, which gets the group's final totals (the others nothing);
  /// nothing is left in flight, and the next job starts afresh.
  virtual std::optional<ProgressCounts> finishProgress(ProgressCounts own);
};

} // namespace ucp

#endif // UCP_ENGINE_PROCESSGROUP_H

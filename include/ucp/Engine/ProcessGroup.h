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

#include <vector>

namespace ucp {

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
};

} // namespace ucp

#endif // UCP_ENGINE_PROCESSGROUP_H

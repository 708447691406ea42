//===- GroupProgress.h - A job's progress over its processes -*- C++ -*-===//
//
// A job shared by a process group reports as one job: every process hands
// its own counts to the group (ProcessGroup::shareProgress), and process 0
// prints the group's totals, while it works on its own share and while it
// waits for the others. After the job, the processes hand over their last
// counts together, and process 0 prints the final totals once.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_GROUPPROGRESS_H
#define UCP_ENGINE_GROUPPROGRESS_H

#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Support/Progress.h"

#include <memory>

namespace ucp {

/// The progress of one job run by `group` (or by this process alone),
/// printed by `print` on the process that reports. Create it on every
/// process of the group, before the job; it must outlive the job.
class GroupProgress {
public:
  /// `print` receives the group's totals on process 0 (this process's own
  /// counts without a group) and may stop the job; it is never called on
  /// the other processes. Empty: nothing is printed.
  GroupProgress(ProcessGroup *group, ProgressFunction print);
  /// Hands the last counts over (collectively, as finish does, but
  /// printing nothing) if finish was not called.
  ~GroupProgress();
  GroupProgress(const GroupProgress &) = delete;
  GroupProgress &operator=(const GroupProgress &) = delete;

  /// The function the job reports to, on every process (empty when there
  /// is neither a group nor a printer).
  ProgressFunction getFunction();
  /// Collective, once the job has succeeded on every process: process 0
  /// prints the group's final totals, unless it printed them last.
  void finish();

private:
  struct State;
  void handOver(bool print);

  ProcessGroup *group;
  std::shared_ptr<State> state;
  bool finished = false;
};

} // namespace ucp

#endif // UCP_ENGINE_GROUPPROGRESS_H

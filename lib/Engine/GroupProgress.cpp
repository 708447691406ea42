//===- GroupProgress.cpp - A job's progress, summed over its processes ----===//

#include "ucp/Engine/GroupProgress.h"

#include <mutex>

using namespace ucp;

/// What the job's function and the group's waiting report share: the
/// printer, this process's last counts and the totals printed last.
struct GroupProgress::State {
  ProgressFunction print;
  std::mutex mutex;
  ProgressCounts own;
  std::optional<ProgressCounts> printed;

  /// Prints `totals` unless they were printed last; what print returns.
  bool printOnce(ProgressCounts totals) {
    if (!print || printed == totals)
      return true;
    printed = totals;
    return print(totals.done, totals.total, totals.bytes);
  }
};

GroupProgress::GroupProgress(ProcessGroup *group, ProgressFunction print)
    : group(group), state(std::make_shared<State>()) {
  state->print = std::move(print);
  if (group && group->getProcess() == 0 && state->print)
    group->setWaitingReport([state = state](ProgressCounts totals) {
      std::lock_guard<std::mutex> lock(state->mutex);
      // A stop asked for here takes effect at the job's next report.
      (void)state->printOnce(totals);
    });
}

GroupProgress::~GroupProgress() {
  if (!finished)
    handOver(/*print=*/false);
}

ProgressFunction GroupProgress::getFunction() {
  if (!group)
    return state->print;
  return
      [group = group, state = state](size_t done, size_t total, int64_t bytes) {
        std::lock_guard<std::mutex> lock(state->mutex);
        state->own = {int64_t(done), int64_t(total), bytes};
        std::optional<ProgressCounts> totals = group->shareProgress(state->own);
        return !totals || state->printOnce(*totals);
      };
}

void GroupProgress::finish() {
  finished = true;
  handOver(/*print=*/true);
}

void GroupProgress::handOver(bool print) {
  if (!group)
    return;
  group->setWaitingReport(nullptr);
  std::lock_guard<std::mutex> lock(state->mutex);
  std::optional<ProgressCounts> totals = group->finishProgress(state->own);
  if (print && totals)
    (void)state->printOnce(*totals);
}

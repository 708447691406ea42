//===- Executor.cpp - Where copy programs run -----------------------------===//

#include "ucp/Engine/Executor.h"
#include "ucp/Engine/ProcessGroup.h"

using namespace ucp;

Executor::~Executor() = default;
ProcessGroup::~ProcessGroup() = default;

std::optional<ProgressCounts> ProcessGroup::shareProgress(ProgressCounts own) {
  if (getProcess() != 0)
    return std::nullopt;
  return own;
}

void ProcessGroup::setWaitingReport(std::function<void(ProgressCounts)>) {}

std::optional<ProgressCounts> ProcessGroup::finishProgress(ProgressCounts own) {
  return shareProgress(own);
}

//===- MpiProgress.cpp - A job's progress relayed to process 0 ------------===//

#include "ProgressRelay.h"

using namespace ucp;

/// The tag of every progress message (on the relay's own communicator).
static constexpr int kProgressTag = 7;
/// The most progress messages a process keeps on their way: past it,
/// process 0 is not taking them in, and new counts wait.
static constexpr size_t kMostInFlight = 64;

/// Sends no more often than this from each process.
static constexpr std::chrono::milliseconds kSendInterval(250);

std::optional<ProgressCounts> MpiGroup::shareProgress(ProgressCounts own) {
  if (broken)
    return std::nullopt;
  if (process == 0) {
    relay->heard[0] = own;
    receiveProgress();
    return sumProgress();
  }
  // Messages MPI has taken leave the queue, oldest first.
  while (!relay->inFlight.empty()) {
    int done = 0;
    MPI_Test(&relay->inFlight.front().request, &done, MPI_STATUS_IGNORE);
    if (!done)
      break;
    relay->inFlight.pop_front();
  }
  auto now = ProgressRelay::Clock::now();
  if ((relay->lastSent && now - *relay->lastSent < kSendInterval) ||
      relay->inFlight.size() >= kMostInFlight)
    return std::nullopt;
  relay->lastSent = now;
  ProgressRelay::Sent &sent = relay->inFlight.emplace_back();
  sent.message = {own.done, own.total, own.bytes, 0};
  MPI_Isend(sent.message.data(), 4, MPI_INT64_T, 0, kProgressTag, relay->comm,
            &sent.request);
  return std::nullopt;
}

void MpiGroup::receiveProgress() {
  // Each peer's messages up to its last: what follows belongs to the next
  // job, which a peer may start before process 0 has finished this one.
  for (int peer = 1; peer < processCount; ++peer)
    while (!relay->ended[peer]) {
      int arrived = 0;
      MPI_Iprobe(peer, kProgressTag, relay->comm, &arrived, MPI_STATUS_IGNORE);
      if (!arrived)
        break;
      ProgressRelay::Message message;
      MPI_Recv(message.data(), 4, MPI_INT64_T, peer, kProgressTag, relay->comm,
               MPI_STATUS_IGNORE);
      relay->hear(peer, message);
    }
}

std::optional<ProgressCounts> MpiGroup::sumProgress() const {
  ProgressCounts totals;
  for (const std::optional<ProgressCounts> &counts : relay->heard) {
    if (!counts)
      return std::nullopt;
    totals.done += counts->done;
    totals.total += counts->total;
    totals.bytes += counts->bytes;
  }
  return totals;
}

void MpiGroup::setWaitingReport(std::function<void(ProgressCounts)> report) {
  relay->waitingReport = std::move(report);
  relay->lastWaitingReport = ProgressRelay::Clock::now();
}

void MpiGroup::reportWhileWaiting() {
  if (process != 0 || !relay->waitingReport)
    return;
  auto now = ProgressRelay::Clock::now();
  if (now - relay->lastWaitingReport < std::chrono::seconds(1))
    return;
  relay->lastWaitingReport = now;
  receiveProgress();
  if (std::optional<ProgressCounts> totals = sumProgress())
    relay->waitingReport(*totals);
}

std::optional<ProgressCounts> MpiGroup::finishProgress(ProgressCounts own) {
  if (broken)
    return std::nullopt;
  std::optional<ProgressCounts> totals;
  if (process != 0) {
    ProgressRelay::Sent &last = relay->inFlight.emplace_back();
    last.message = {own.done, own.total, own.bytes, 1};
    MPI_Isend(last.message.data(), 4, MPI_INT64_T, 0, kProgressTag, relay->comm,
              &last.request);
    std::vector<MPI_Request> requests;
    for (ProgressRelay::Sent &sent : relay->inFlight)
      requests.push_back(sent.request);
    llvm::consumeError(waitAll(requests, "handing progress to process 0"));
  } else {
    relay->heard[0] = own;
    receiveProgress();
    // A pair's messages arrive in order: each process's last comes last.
    for (int peer = 1; peer < processCount && !broken; ++peer)
      while (!relay->ended[peer]) {
        ProgressRelay::Message message;
        MPI_Request request;
        MPI_Irecv(message.data(), 4, MPI_INT64_T, peer, kProgressTag,
                  relay->comm, &request);
        if (llvm::Error error =
                waitAll(request, "hearing process " + std::to_string(peer) +
                                     "'s progress")) {
          llvm::consumeError(std::move(error));
          break;
        }
        relay->hear(peer, message);
      }
    if (!broken)
      totals = sumProgress();
  }
  // The next job starts afresh. (A broken group keeps what MPI may still
  // read: it is aborted, not reused.)
  if (broken)
    return std::nullopt;
  relay->inFlight.clear();
  relay->lastSent.reset();
  relay->heard.assign(processCount, std::nullopt);
  relay->ended.assign(processCount, false);
  return totals;
}

//===- ProgressRelay.h - Progress messages of an MpiGroup -------*- C++ -*-===//
//
// What an MpiGroup keeps of the progress its job shares (MpiProgress.cpp):
// each message is four int64 values, (done, total, bytes, last), sent by
// a process to process 0 on a communicator used for nothing else, so that
// they never meet the group's collectives.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DISTRIBUTED_PROGRESSRELAY_H
#define UCP_LIB_DISTRIBUTED_PROGRESSRELAY_H

#include "ucp/Distributed/MpiTransfer.h"

#include <array>
#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

namespace ucp {

struct MpiGroup::ProgressRelay {
  using Clock = std::chrono::steady_clock;
  /// One message: done, total, bytes, and 1 on a process's last.
  using Message = std::array<int64_t, 4>;
  struct Sent {
    Message message;
    MPI_Request request;
  };

  MPI_Comm comm = MPI_COMM_NULL;
  /// Every process but 0: its messages still on their way (a deque keeps
  /// each buffer in place while MPI reads it), and when it sent last.
  std::deque<Sent> inFlight;
  std::optional<Clock::time_point> lastSent;
  /// Process 0: the counts each process sent last, and whether that was
  /// its last message.
  std::vector<std::optional<ProgressCounts>> heard;
  std::vector<bool> ended;
  std::function<void(ProgressCounts)> waitingReport;
  Clock::time_point lastWaitingReport;

  /// Process 0: takes in `message` from `peer`.
  void hear(int peer, const Message &message) {
    heard[peer] = ProgressCounts{message[0], message[1], message[2]};
    ended[peer] = message[3] != 0;
  }
};

} // namespace ucp

#endif // UCP_LIB_DISTRIBUTED_PROGRESSRELAY_H

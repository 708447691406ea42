//===- MpiTransfer.h - Transfers across the processes of MPI ----*- C++ -*-===//
//
// Runs a transfer across the processes of an MPI communicator
// (docs/Distributed.md). Every process plans the whole transfer from the
// same maps; each then holds the shards of the ranks it owns. A buffer pair
// whose source and target sit in one process is copied there by the CPU
// executor; the others travel as point-to-point messages, one stream per
// peer and batch: long copies contiguous on one side straight from or into
// the shards, everything else packed and unpacked by the CPU executor,
// scale applied. Within a node, a long copy into a strided target is read
// by the receiver from the sender's memory in one pass instead. Local
// copies run while messages are in flight. Every wait is bounded: a peer
// silent for longer than the timeout fails the run, on every process that
// notices, instead of hanging it.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DISTRIBUTED_MPITRANSFER_H
#define UCP_DISTRIBUTED_MPITRANSFER_H

#include "ucp/Engine/ProcessGroup.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <mpi.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>

namespace ucp {

/// The process of a communicator that holds each rank's shard, on both
/// sides of a transfer (by rank).
struct ProcessOwnership {
  std::vector<int64_t> sourceProcesses;
  std::vector<int64_t> targetProcesses;
};

/// Rank r of either side on process r % processes.
ProcessOwnership getRoundRobinOwnership(int64_t sourceWorld,
                                        int64_t targetWorld, int processes);

/// Parses `text`, a comma-separated process per rank ("0,0,1,1"), for the
/// `world` ranks of side `side` ("source") over `processes` processes.
llvm::Expected<std::vector<int64_t>> parseProcessList(llvm::StringRef text,
                                                      int64_t world,
                                                      int processes,
                                                      llvm::StringRef side);

/// A process that makes itself fail at a chosen point, so that tests can
/// watch the others (never set outside tests).
struct InjectedFault {
  enum Kind { None, Kill, Hang } kind = None;
  /// The process that fails, and the batch of execute at which it does,
  /// once its messages of that batch are on their way; in a job that
  /// divides its outputs, once it has written that many outputs.
  int process = 0;
  int64_t batch = 0;
};

/// The longest wait MpiGroupOptions::timeoutSeconds may name (a year).
constexpr int64_t kMaxTimeoutSeconds = int64_t(365) * 24 * 3600;

struct MpiGroupOptions {
  /// How long any wait for another process may last, in seconds.
  double timeoutSeconds = 300;
  /// Threads of each process for its local copies (0: every core).
  unsigned threads = 0;
  /// See ProcessGroup::getBatchBytes.
  int64_t batchBytes = int64_t(256) << 20;
  /// Between processes of one node, where the kernel lets them: a long
  /// copy from a contiguous source into a strided target is read by the
  /// receiver straight from the sender's memory (process_vm_readv) in one
  /// pass, not received into a staging buffer and unpacked.
  bool singleCopy = true;
  InjectedFault fault;
};

/// The processes of an MPI communicator as a ProcessGroup.
class MpiGroup : public ProcessGroup {
public:
  /// Returns the group of `comm` (duplicated, so that its messages never
  /// meet the caller's) holding the ranks as `ownership` says; every
  /// process must pass the same ownership.
  static llvm::Expected<std::unique_ptr<MpiGroup>>
  create(MPI_Comm comm, ProcessOwnership ownership, MpiGroupOptions options);
  ~MpiGroup() override;

  int getProcess() const override { return process; }
  int getProcessCount() const override { return processCount; }
  void markOutputWritten() override;
  bool holdsSource(int64_t rank) const override;
  bool holdsTarget(int64_t rank) const override;
  llvm::Error agree(llvm::Error local) override;
  /// This process's failures, as agree sends them to the others and
  /// returns them here, name `shown` wherever they name `read`: the folder
  /// this process reads (a node-local input's local folder) as the user
  /// gave it.
  void showFolderAs(llvm::StringRef read, llvm::StringRef shown);
  llvm::Error reduce(std::vector<int64_t> &values,
                     Reduction reduction) override;
  /// Collective: `bytes` of every process become process `root`'s, within
  /// the timeout.
  llvm::Error broadcast(llvm::MutableArrayRef<char> bytes,
                        int root) override;
  /// Collective: every process's `own` bytes, in process order, within
  /// the timeout (at most one message's worth from each).
  llvm::Expected<std::vector<std::string>> allGather(llvm::StringRef own);
  /// Runs every program of `batch` on the buffers each process holds: the
  /// library entry point for callers with their own buffers.
  llvm::Error execute(llvm::ArrayRef<ProgramRun> batch) override;
  int64_t getBatchBytes() const override { return options.batchBytes; }

  /// Progress travels to process 0 in small messages on a communicator of
  /// its own, at most four a second from each process, never waited for
  /// while the job runs; process 0 reports while it waits in any
  /// collective, and finishProgress receives every message still on its
  /// way.
  std::optional<ProgressCounts> shareProgress(ProgressCounts own) override;
  void setWaitingReport(std::function<void(ProgressCounts)> report) override;
  std::optional<ProgressCounts> finishProgress(ProgressCounts own) override;

  /// Bytes this process has sent to other processes so far.
  int64_t getBytesSent() const { return bytesSent; }
  /// Whether a wait timed out: the processes can no longer agree, and the
  /// caller should abort the communicator rather than finalize it.
  bool isBroken() const { return broken; }

private:
  MpiGroup(MPI_Comm comm, ProcessOwnership ownership, MpiGroupOptions options);
  /// Waits for `requests` until the timeout, failing with a message that
  /// names `what` (and marking the group broken) when it passes.
  llvm::Error waitAll(llvm::MutableArrayRef<MPI_Request> requests,
                      llvm::StringRef what);
  /// As waitAll, calling `completed` with the index of each request as it
  /// completes.
  llvm::Error waitSome(llvm::MutableArrayRef<MPI_Request> requests,
                       llvm::StringRef what,
                       llvm::function_ref<void(int)> completed);
  /// Process 0: takes in every progress message that has arrived.
  void receiveProgress();
  /// Process 0: the group's totals, once every process has been heard.
  std::optional<ProgressCounts> sumProgress() const;
  /// Process 0, inside a wait: the waiting report, about once a second.
  void reportWhileWaiting();
  /// Dies or hangs when the injected fault names this process and `step`.
  void injectFault(int64_t step);
  /// A buffer of at least `bytes` for what is packed or staged for (from)
  /// `peer`, kept between batches.
  char *getMessageBuffer(int peer, bool send, int64_t bytes);

  struct MessageBuffer {
    std::unique_ptr<char[]> data;
    int64_t capacity = 0;
  };

  MPI_Comm comm;
  ProcessOwnership ownership;
  MpiGroupOptions options;
  int process = 0;
  int processCount = 1;
  int64_t batches = 0;
  /// The outputs a job has written on this process (markOutputWritten,
  /// called from the job's threads).
  std::atomic<int64_t> outputs{0};
  int64_t bytesSent = 0;
  bool broken = false;
  /// What this process's failures name as what (showFolderAs).
  std::string readFolder, shownFolder;
  std::map<int, MessageBuffer> sendBuffers, receiveBuffers;
  /// The progress messages in flight and heard (MpiProgress.cpp).
  struct ProgressRelay;
  std::unique_ptr<ProgressRelay> relay;
  /// Process ids by process; the peers whose memory this process reaches.
  std::vector<int64_t> pids;
  std::set<int> nodePeers;

  friend class MpiExchange;
};

} // namespace ucp

#endif // UCP_DISTRIBUTED_MPITRANSFER_H

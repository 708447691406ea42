//===- MpiGroup.cpp - The processes of MPI as a transfer group ------------===//

#include "ucp/Distributed/MpiTransfer.h"
#include "ucp/Support/Error.h"

#include "ProcessMemory.h"
#include "ProgressRelay.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <climits>
#include <csignal>
#include <thread>
#include <unistd.h>

using namespace ucp;

ProcessOwnership ucp::getRoundRobinOwnership(int64_t sourceWorld,
                                             int64_t targetWorld,
                                             int processes) {
  ProcessOwnership ownership;
  for (int64_t rank = 0; rank < sourceWorld; ++rank)
    ownership.sourceProcesses.push_back(rank % processes);
  for (int64_t rank = 0; rank < targetWorld; ++rank)
    ownership.targetProcesses.push_back(rank % processes);
  return ownership;
}

llvm::Expected<std::vector<int64_t>>
ucp::parseProcessList(llvm::StringRef text, int64_t world, int processes,
                      llvm::StringRef side) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',');
  if (static_cast<int64_t>(items.size()) != world)
    return makeError("the " + side + " process list '" + text + "' names " +
                     llvm::Twine(items.size()) + " ranks, but the " + side +
                     " maps have " + llvm::Twine(world));
  std::vector<int64_t> list;
  for (auto [rank, item] : llvm::enumerate(items)) {
    int64_t process;
    if (item.trim().getAsInteger(10, process) || process < 0 ||
        process >= processes)
      return makeError("the " + side + " process list gives rank " +
                       llvm::Twine(rank) + " process '" + item +
                       "', not one of 0.." + llvm::Twine(processes - 1));
    list.push_back(process);
  }
  return list;
}

MpiGroup::MpiGroup(MPI_Comm comm, ProcessOwnership ownership,
                   MpiGroupOptions options)
    : comm(comm), ownership(std::move(ownership)), options(options) {
  MPI_Comm_rank(comm, &process);
  MPI_Comm_size(comm, &processCount);
}

llvm::Expected<std::unique_ptr<MpiGroup>>
MpiGroup::create(MPI_Comm comm, ProcessOwnership ownership,
                 MpiGroupOptions options) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  for (const auto *list :
       {&ownership.sourceProcesses, &ownership.targetProcesses})
    for (auto [rank, holder] : llvm::enumerate(*list))
      if (holder < 0 || holder >= size)
        return makeError(
            llvm::Twine(list == &ownership.sourceProcesses ? "source"
                                                           : "target") +
            " rank " + llvm::Twine(rank) + " is given to process " +
            llvm::Twine(holder) + ", but the communicator has " +
            llvm::Twine(size) + " processes");
  // NaN fails the comparison; beyond kMaxTimeoutSeconds the deadline would
  // overflow the clock.
  if (!(options.timeoutSeconds > 0 &&
        options.timeoutSeconds <= kMaxTimeoutSeconds))
    return makeError("the timeout must be a positive number of seconds up to " +
                     llvm::Twine(kMaxTimeoutSeconds));
  if (options.batchBytes <= 0)
    return makeError("the batch size must be positive");
  MPI_Comm own;
  if (MPI_Comm_dup(comm, &own) != MPI_SUCCESS)
    return makeError("cannot duplicate the MPI communicator");
  std::unique_ptr<MpiGroup> group(
      new MpiGroup(own, std::move(ownership), options));
  group->relay = std::make_unique<ProgressRelay>();
  if (MPI_Comm_dup(own, &group->relay->comm) != MPI_SUCCESS)
    return makeError("cannot duplicate the MPI communicator");
  group->relay->heard.resize(size);
  group->relay->ended.resize(size);
  if (options.singleCopy) {
    NodePeers peers = findNodePeers(own);
    group->pids.assign(peers.pids.begin(), peers.pids.end());
    group->nodePeers = std::move(peers.reachable);
  }
  return std::move(group);
}

MpiGroup::~MpiGroup() {
  // Freeing is collective in the standard; after a timeout the peers may
  // never join, and the caller aborts instead.
  if (broken)
    return;
  // Progress a job never finished (finishProgress) is not waited for.
  for (ProgressRelay::Sent &sent : relay->inFlight)
    MPI_Request_free(&sent.request);
  if (relay->comm != MPI_COMM_NULL)
    MPI_Comm_free(&relay->comm);
  MPI_Comm_free(&comm);
}

bool MpiGroup::holdsSource(int64_t rank) const {
  return rank >= 0 &&
         rank < static_cast<int64_t>(ownership.sourceProcesses.size()) &&
         ownership.sourceProcesses[rank] == process;
}

bool MpiGroup::holdsTarget(int64_t rank) const {
  return rank >= 0 &&
         rank < static_cast<int64_t>(ownership.targetProcesses.size()) &&
         ownership.targetProcesses[rank] == process;
}

llvm::Error MpiGroup::waitSome(llvm::MutableArrayRef<MPI_Request> requests,
                               llvm::StringRef what,
                               llvm::function_ref<void(int)> completed) {
  using Clock = std::chrono::steady_clock;
  auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.timeoutSeconds));
  std::vector<int> done(requests.size());
  for (unsigned polls = 0;;) {
    int count = 0;
    MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &count,
                 done.data(), MPI_STATUSES_IGNORE);
    if (count == MPI_UNDEFINED) // None left.
      return llvm::Error::success();
    for (int i = 0; i < count; ++i)
      completed(done[i]);
    if (count) {
      polls = 0;
      continue;
    }
    if (Clock::now() > deadline) {
      broken = true;
      return makeError(
          "no answer within " + llvm::formatv("{0}", options.timeoutSeconds) +
          " s while " + what + " (a process died or hangs); giving up");
    }
    // Spin briefly for latency, then yield the core: processes often
    // outnumber cores.
    if (++polls > 256) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      reportWhileWaiting();
    }
  }
}

llvm::Error MpiGroup::waitAll(llvm::MutableArrayRef<MPI_Request> requests,
                              llvm::StringRef what) {
  return waitSome(requests, what, [](int) {});
}

llvm::Error MpiGroup::agree(llvm::Error local) {
  if (broken)
    return local;
  bool failed = static_cast<bool>(local);
  std::string message = failed ? replaceAll(llvm::toString(std::move(local)),
                                            readFolder, shownFolder)
                               : "";
  // The lowest failing process speaks for all.
  int mine = failed ? process : INT_MAX, first = INT_MAX;
  MPI_Request request;
  MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm, &request);
  if (llvm::Error error = waitAll(request, "agreeing on a step's outcome"))
    return failed ? llvm::joinErrors(makeError(message), std::move(error))
                  : std::move(error);
  if (first == INT_MAX)
    return llvm::Error::success();
  // Long enough for any diagnostic, bounded for the broadcast.
  int length = static_cast<int>(std::min<size_t>(message.size(), 1 << 16));
  if (llvm::Error error =
          broadcast({reinterpret_cast<char *>(&length), sizeof length}, first))
    return error;
  std::string text(length, '\0');
  if (process == first)
    text = message.substr(0, length);
  if (llvm::Error error = broadcast({text.data(), text.size()}, first))
    return error;
  if (process == first)
    return makeError(message);
  return makeError("process " + llvm::Twine(first) + " failed: " + text);
}

void MpiGroup::showFolderAs(llvm::StringRef read, llvm::StringRef shown) {
  readFolder = read.str();
  shownFolder = shown.str();
}

llvm::Error MpiGroup::reduce(std::vector<int64_t> &values,
                             Reduction reduction) {
  if (broken)
    return makeError("the process group is broken");
  MPI_Request request;
  MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                 MPI_INT64_T, reduction == Reduction::Max ? MPI_MAX : MPI_SUM,
                 comm, &request);
  return waitAll(request, "combining the processes' counts");
}

llvm::Error MpiGroup::broadcast(llvm::MutableArrayRef<char> bytes, int root) {
  if (broken)
    return makeError("the process group is broken");
  MPI_Request request;
  MPI_Ibcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, root, comm,
             &request);
  return waitAll(request, "hearing from process " + std::to_string(root));
}

llvm::Expected<std::vector<std::string>>
MpiGroup::allGather(llvm::StringRef own) {
  if (broken)
    return makeError("the process group is broken");
  // Lengths first, as 64-bit counts: every process then finds the same
  // one too long.
  std::vector<int64_t> lengths(processCount);
  lengths[process] = static_cast<int64_t>(own.size());
  MPI_Request request;
  MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, lengths.data(), 1,
                 MPI_INT64_T, comm, &request);
  if (llvm::Error error = waitAll(request, "hearing every process's length"))
    return std::move(error);
  std::vector<int> counts(processCount), offsets(processCount);
  int64_t total = 0;
  for (int p = 0; p < processCount; ++p) {
    if (total + lengths[p] > INT_MAX)
      return makeError("process " + llvm::Twine(p) + " has " +
                       llvm::Twine(lengths[p]) + " bytes to tell, more " +
                       "than one message holds with the others'");
    counts[p] = static_cast<int>(lengths[p]);
    offsets[p] = static_cast<int>(total);
    total += lengths[p];
  }
  std::string gathered(total, '\0');
  MPI_Iallgatherv(own.data(), counts[process], MPI_BYTE, gathered.data(),
                  counts.data(), offsets.data(), MPI_BYTE, comm, &request);
  if (llvm::Error error = waitAll(request, "hearing every process"))
    return std::move(error);
  std::vector<std::string> all;
  for (int p = 0; p < processCount; ++p)
    all.push_back(gathered.substr(offsets[p], counts[p]));
  return all;
}

void MpiGroup::markOutputWritten() { injectFault(++outputs); }

void MpiGroup::injectFault(int64_t step) {
  if (options.fault.kind == InjectedFault::None ||
      options.fault.process != process || options.fault.batch != step)
    return;
  if (options.fault.kind == InjectedFault::Kill)
    raise(SIGKILL);
  for (;;)
    pause();
}

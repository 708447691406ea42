//===- ucp-mpi-progress.cpp - A job's progress summed over MPI processes --===//
//
//   mpirun -np P ucp-mpi-progress
//
// Two jobs, each process reporting through a GroupProgress. In the first,
// process 0 reports its 2 units at once and waits for the others (in an
// agreement), which report their 8 units one every 300 ms: process 0
// prints the group's totals while it waits, as "progress D/T B". In the
// second (a job with other counts, on the same group), every process
// reports 3 units at once. After each job, process 0 prints the final
// totals ("final D/T B"); the others print nothing.
//
//===----------------------------------------------------------------------===//

#include "ucp/Distributed/MpiTransfer.h"
#include "ucp/Engine/GroupProgress.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace ucp;

/// One job: `units` reported by this process, `pause` between them, then
/// an agreement; returns 0 when the group agreed.
static int runJob(MpiGroup &group, int64_t units,
                  std::chrono::milliseconds pause) {
  const char *label = "progress";
  GroupProgress progress(&group, [&](size_t done, size_t total, int64_t bytes) {
    std::printf("%s %zu/%zu %lld\n", label, done, total,
                static_cast<long long>(bytes));
    std::fflush(stdout);
    return true;
  });
  ProgressFunction report = progress.getFunction();
  for (int64_t done = 1; done <= units; ++done) {
    std::this_thread::sleep_for(pause);
    // Bytes: 10 per unit on process 0, 1 per unit elsewhere.
    if (!report(done, units, done * (group.getProcess() == 0 ? 10 : 1)))
      return 1;
  }
  if (llvm::Error error = group.agree(llvm::Error::success())) {
    std::fprintf(stderr, "%s\n", llvm::toString(std::move(error)).c_str());
    return 1;
  }
  label = "final";
  progress.finish();
  return 0;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MpiGroupOptions options;
  options.timeoutSeconds = argc > 1 ? std::atof(argv[1]) : 120;
  llvm::Expected<std::unique_ptr<MpiGroup>> group =
      MpiGroup::create(MPI_COMM_WORLD, {}, options);
  if (!group) {
    std::fprintf(stderr, "%s\n", llvm::toString(group.takeError()).c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  bool first = (*group)->getProcess() == 0;
  int failed = runJob(**group, first ? 2 : 8,
                      std::chrono::milliseconds(first ? 0 : 300)) ||
               runJob(**group, 3, std::chrono::milliseconds(0));
  group->reset();
  MPI_Finalize();
  return failed;
}

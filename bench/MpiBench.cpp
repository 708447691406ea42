//===- MpiBench.cpp - Resharding across processes against MPI_Alltoallv ---===//
//
//   mpirun -np 4 ucp-mpi-bench [MiB]
//
// A model of F32 weights (half split by rows, half by columns: packed
// strided views) resharded TP=4 -> TP=2 and TP=2 -> TP=4 across the
// processes, each holding its ranks round-robin: MpiGroup::execute (pack,
// point-to-point messages, local copies, unpack) against MPI_Alltoallv of
// the same bytes between the same processes (already packed: the transport
// alone), against that followed by the copies that stay in each process
// (what a reshard must do besides), and against one process running the
// whole reshard by itself.
// Best of seven, the two across processes taking turns; process 0 prints
// the table.
//
//===----------------------------------------------------------------------===//

#include "BenchTiming.h"
#include "ucp/Distributed/MpiTransfer.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Planner.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace ucp;

namespace {

constexpr int kRepeats = 7;
constexpr int64_t kColumns = 4096;

/// `count` weights of [rows, kColumns] at tensor-parallel degree `tp`,
/// split by rows and columns in turn (or all by rows).
std::vector<ParamMap> makeModel(int count, int64_t rows, int64_t tp,
                                bool rowsOnly) {
  std::vector<ParamMap> maps;
  for (int i = 0; i < count; ++i) {
    int64_t dim = rowsOnly ? 0 : i % 2;
    int64_t extent = dim == 0 ? rows : kColumns;
    maps.push_back(llvm::cantFail(
        buildSplitLayout("layer" + std::to_string(i) + ".weight",
                         {rows, kColumns}, dim, Extents(tp, extent / tp))));
  }
  return maps;
}

/// Waits for every process without spinning, so that a process working
/// alone keeps the cores.
void waitQuietly() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0; !done;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// The time of `fn` run by every process, barrier to barrier.
template <typename Fn> double timeAll(Fn fn) {
  return bench::timeBest(1, [&] {
    MPI_Barrier(MPI_COMM_WORLD);
    fn();
    MPI_Barrier(MPI_COMM_WORLD);
  });
}

/// MPI_Alltoallv of `sendBytes` to and `receiveBytes` from each process,
/// its buffers allocated once.
class Alltoallv {
public:
  Alltoallv(llvm::ArrayRef<int64_t> sendBytes,
            llvm::ArrayRef<int64_t> receiveBytes) {
    int64_t receiveTotal = 0;
    for (size_t p = 0; p < sendBytes.size(); ++p) {
      sendCounts.push_back(static_cast<int>(sendBytes[p]));
      receiveCounts.push_back(static_cast<int>(receiveBytes[p]));
      sendOffsets.push_back(static_cast<int>(sendTotal));
      receiveOffsets.push_back(static_cast<int>(receiveTotal));
      sendTotal += sendBytes[p];
      receiveTotal += receiveBytes[p];
    }
    sendBuffer.assign(sendTotal, 1);
    receiveBuffer.resize(receiveTotal);
  }
  void run() {
    MPI_Alltoallv(sendBuffer.data(), sendCounts.data(), sendOffsets.data(),
                  MPI_BYTE, receiveBuffer.data(), receiveCounts.data(),
                  receiveOffsets.data(), MPI_BYTE, MPI_COMM_WORLD);
  }
  int64_t sendTotal = 0;

private:
  std::vector<int> sendCounts, receiveCounts, sendOffsets, receiveOffsets;
  std::vector<char> sendBuffer, receiveBuffer;
};

/// The copies of `program` whose two ranks `group` holds.
CopyProgram getLocalProgram(const CopyProgram &program, const MpiGroup &group) {
  CopyProgram local;
  local.sourceElements = program.sourceElements;
  local.targetElements = program.targetElements;
  for (const BufferPairCopies &pair : program.pairs)
    if (group.holdsSource(pair.sourceBuffer) &&
        group.holdsTarget(pair.targetBuffer))
      local.pairs.push_back(pair);
  return local;
}

struct Case {
  const char *name;
  int64_t from, to;
  bool rowsOnly;
  /// Whether processes read each other's memory (MpiGroupOptions).
  bool singleCopy = true;
};

/// Runs one case and prints its row on process 0.
void runCase(const Case &c, int count, int64_t rows, int process,
             int processes) {
  TransferPrograms programs =
      llvm::cantFail(planTransfers(makeModel(count, rows, c.from, c.rowsOnly),
                                   makeModel(count, rows, c.to, c.rowsOnly)));
  ProcessOwnership owners = getRoundRobinOwnership(c.from, c.to, processes);
  MpiGroupOptions options;
  options.singleCopy = c.singleCopy;
  options.threads = 1;
  auto group =
      llvm::cantFail(MpiGroup::create(MPI_COMM_WORLD, owners, options));
  // Every buffer of every rank is allocated on each process (its own ranks'
  // hold data): process 0 also runs the whole reshard alone.
  std::vector<std::vector<float>> storage;
  std::vector<ProgramRun> all, mine;
  std::vector<CopyProgram> locals;
  locals.reserve(programs.size());
  std::vector<int64_t> sendBytes(processes), receiveBytes(processes);
  for (auto &[name, program] : programs) {
    ProgramRun full{&program, {}, DType::F32};
    ProgramRun own{&program, {}, DType::F32};
    for (auto &[rank, elements] : program.sourceElements) {
      bool held = group->holdsSource(rank);
      if (!held && process != 0)
        continue;
      storage.emplace_back(elements, 1.0f + rank);
      full.buffers.sources[rank] = storage.back().data();
      if (held)
        own.buffers.sources[rank] = storage.back().data();
    }
    for (auto &[rank, elements] : program.targetElements) {
      bool held = group->holdsTarget(rank);
      if (!held && process != 0)
        continue;
      storage.emplace_back(elements, 0.0f);
      full.buffers.targets[rank] = storage.back().data();
      if (held)
        own.buffers.targets[rank] = storage.back().data();
    }
    for (const BufferPairCopies &pair : program.pairs) {
      int64_t from = owners.sourceProcesses[pair.sourceBuffer];
      int64_t to = owners.targetProcesses[pair.targetBuffer];
      if (from == to)
        continue;
      for (const StridedCopy &copy : pair.copies) {
        int64_t bytes = *getNumElements(copy.shape) * 4;
        if (from == process)
          sendBytes[to] += bytes;
        if (to == process)
          receiveBytes[from] += bytes;
      }
    }
    locals.push_back(getLocalProgram(program, *group));
    all.push_back(std::move(full));
    mine.push_back(std::move(own));
  }
  // The tool's batches: up to 256 MB of targets per exchange.
  auto runOurs = [&] {
    std::vector<ProgramRun> batch;
    int64_t bytes = 0;
    for (auto [i, run] : llvm::enumerate(mine)) {
      batch.push_back(run);
      for (auto &[rank, elements] : run.program->targetElements)
        bytes += elements * 4;
      if (bytes >= group->getBatchBytes() || i + 1 == mine.size()) {
        llvm::cantFail(group->execute(batch));
        batch.clear();
        bytes = 0;
      }
    }
  };
  // The same bytes between the same processes in one collective; and
  // that, then the copies that stay in each process.
  Alltoallv collective(sendBytes, receiveBytes);
  auto runWithLocal = [&] {
    collective.run();
    for (auto [run, local] : llvm::zip(mine, locals))
      executeOnCpu({&local, run.buffers, run.type}, 1);
  };
  // In turns, so that all see the machine in the same moods.
  double ours = 1e30, alltoallv = 1e30, withLocal = 1e30;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    ours = std::min(ours, timeAll(runOurs));
    alltoallv = std::min(alltoallv, timeAll([&] { collective.run(); }));
    withLocal = std::min(withLocal, timeAll(runWithLocal));
  }
  double alone = 0;
  if (process == 0)
    alone = bench::timeBest(kRepeats, [&] {
      for (const ProgramRun &run : all)
        executeOnCpu({run.program, run.buffers, run.type});
    });
  waitQuietly();
  int64_t moved[2] = {collective.sendTotal, 0};
  for (const ProgramRun &run : mine)
    for (auto &[rank, pointer] : run.buffers.targets)
      moved[1] += run.program->targetElements.at(rank) * 4;
  MPI_Allreduce(MPI_IN_PLACE, moved, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (process == 0)
    std::printf("| %s | %.0f | %.0f | %.3f (%.2f GB/s) | %.3f (%.2f GB/s) | "
                "%.2f | %.3f | %.2f | %.3f | %.2f |\n",
                c.name, moved[1] / 1e6, moved[0] / 1e6, ours,
                moved[0] / 1e9 / ours, alltoallv, moved[0] / 1e9 / alltoallv,
                alltoallv / ours, withLocal, withLocal / ours, alone,
                alone / ours);
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int process = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  int64_t mebibytes = argc > 1 ? std::atoll(argv[1]) : 1024;
  // Eight weights of [rows, 4096] F32 (rows a multiple of 8).
  int64_t rows = std::max<int64_t>(8, mebibytes * (int64_t(1) << 20) /
                                          (8 * kColumns * 4) / 8 * 8);
  if (process == 0) {
    std::printf("ucp-mpi-bench: %d processes, 8 F32 weights of [%lld, %lld] "
                "(%.0f MB), best of %d\n\n",
                processes, static_cast<long long>(rows),
                static_cast<long long>(kColumns), 8 * rows * kColumns * 4 / 1e6,
                kRepeats);
    std::printf("| reshard | MB written | MB between processes | ucp MPI s | "
                "MPI_Alltoallv s | ucp / Alltoallv speed | Alltoallv + local "
                "copies s | ucp / that | one process s | one process / ucp "
                "MPI |\n|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (Case c : {Case{"4 -> 2", 4, 2, false}, Case{"2 -> 4", 2, 4, false},
                 Case{"4 -> 2, every copy sent", 4, 2, false, false},
                 Case{"2 -> 4, every copy sent", 2, 4, false, false},
                 Case{"4 -> 2, row splits only", 4, 2, true},
                 Case{"2 -> 4, row splits only", 2, 4, true}})
    runCase(c, 8, rows, process, processes);
  MPI_Finalize();
  return 0;
}

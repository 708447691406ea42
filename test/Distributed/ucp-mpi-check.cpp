//===- ucp-mpi-check.cpp - Transfers across processes, checked bit-exactly
//-===//
//
//   mpirun -np P ucp-mpi-check [seed] [plans per type] [mpi|mpi-staged|nccl]
//                              [timeout]
//
// Every process draws the same random plans (every element type, with the
// fixed plans of the executor tests), the same process for each rank and
// the same source data; each runs the plans across the processes in
// batches of up to four, holding only its own ranks' buffers (in host
// memory for MPI, in its GPU's for NCCL; mpi-staged sends every copy,
// where mpi lets processes read each other's memory), and compares
// every target it holds byte for byte with the CPU executor running the
// whole program alone. Process 0 prints the totals; a mismatch names the
// plan, rank and byte, and fails every process. A wait for a peer gives up
// after `timeout` seconds (600 by default: long enough for a loaded
// machine; the tests of the timeout itself give 1).
//
//===----------------------------------------------------------------------===//

#include "RandomPlans.h"
#include "ucp/Distributed/MpiTransfer.h"
#include "ucp/Distributed/NcclTransfer.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/CopyProgram.h"
#include "ucp/Support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace ucp;

namespace {

/// One plan's program with every rank's buffers, and the reference result.
struct CheckedProgram {
  std::string name;
  CopyProgram program;
  DType type;
  std::map<int64_t, std::vector<char>> sources, expected, targets;
};

CheckedProgram prepare(const TransferPlan &plan, DType type, uint64_t seed) {
  CheckedProgram checked{plan.name, lowerPlan(plan), type, {}, {}, {}};
  int64_t size = getElementSize(type);
  ProgramBuffers all;
  for (const auto &[rank, elements] : checked.program.sourceElements) {
    std::vector<char> &data = checked.sources[rank];
    data.resize(elements * size);
    writeRandomElements(type, data.data(), elements, seed + rank);
    all.sources[rank] = data.data();
  }
  for (const auto &[rank, elements] : checked.program.targetElements) {
    // Bytes nothing writes would differ between the two runs and fail.
    checked.expected[rank].assign(elements * size, '\x5a');
    checked.targets[rank].assign(elements * size, '\x5a');
    all.targets[rank] = checked.expected[rank].data();
  }
  executeOnCpu({&checked.program, all, type}, 1);
  return checked;
}

/// Draws the process of each of `world` ranks.
std::vector<int64_t> drawProcesses(std::mt19937_64 &rng, int64_t world,
                                   int processes) {
  std::vector<int64_t> list;
  for (int64_t rank = 0; rank < world; ++rank)
    list.push_back(std::uniform_int_distribution<int>(0, processes - 1)(rng));
  return list;
}

int64_t getWorld(const std::map<int64_t, int64_t> &buffers) {
  return buffers.empty() ? 0 : buffers.rbegin()->first + 1;
}

/// Plans whose copies are long enough to travel as messages of their own:
/// row splits (contiguous on both sides), column splits (contiguous on one
/// side), and for floating point a scaled replica split (contiguous, but
/// someone must scale), each way round.
std::vector<TransferPlan> makeLongCopyPlans(DType type) {
  Extents shape = {256, 512};
  auto split = [&](int64_t dim, int64_t world) {
    return llvm::cantFail(buildSplitLayout("long", shape, dim,
                                           Extents(world, shape[dim] / world)));
  };
  std::vector<std::pair<ParamMap, ParamMap>> pairs = {
      {split(0, 4), split(0, 2)},
      {split(1, 4), split(1, 2)},
      {split(0, 2), split(1, 4)},
      {split(1, 2), split(0, 4)}};
  if (isFloatingPoint(type)) {
    ParamMap halves =
        llvm::cantFail(buildReplicatedLayout("long", shape, 2, 0.5));
    pairs.push_back({halves, split(0, 4)});
    pairs.push_back({split(1, 4), halves});
  }
  std::vector<TransferPlan> plans;
  for (const auto &[source, target] : pairs) {
    SentElements sent;
    plans.push_back(llvm::cantFail(composeMaps(source, target, {}, sent)));
  }
  return plans;
}

[[noreturn]] void fail(int process, llvm::Error error) {
  std::fprintf(stderr, "process %d: %s\n", process,
               llvm::toString(std::move(error)).c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

/// Runs `batch` across the processes over MPI, on host buffers.
int64_t runOverMpi(std::vector<CheckedProgram> &batch,
                   const ProcessOwnership &ownership,
                   const MpiGroupOptions &options, int process) {
  auto group =
      llvm::cantFail(MpiGroup::create(MPI_COMM_WORLD, ownership, options));
  std::vector<ProgramRun> runs;
  for (CheckedProgram &checked : batch) {
    ProgramRun run{&checked.program, {}, checked.type};
    for (auto &[rank, data] : checked.sources)
      if (group->holdsSource(rank))
        run.buffers.sources[rank] = data.data();
    for (auto &[rank, data] : checked.targets)
      if (group->holdsTarget(rank))
        run.buffers.targets[rank] = data.data();
    runs.push_back(std::move(run));
  }
  if (llvm::Error error = group->execute(runs))
    fail(process, std::move(error));
  return group->getBytesSent();
}

/// Copies `data` into fresh GPU memory of `memory`.
DeviceAddress upload(CudaMemory &memory, const std::vector<char> &data,
                     int process) {
  DeviceAddress address = 0;
  llvm::Error error = [&]() -> llvm::Error {
    // A rank may hold no elements; allocations hold one byte at least.
    llvm::Expected<DeviceAddress> allocated =
        memory.allocate(std::max<size_t>(data.size(), 1));
    if (!allocated)
      return allocated.takeError();
    address = *allocated;
    if (data.empty())
      return llvm::Error::success();
    return memory.getDevice()->copyToDevice(address, data.data(), data.size());
  }();
  if (error)
    fail(process, std::move(error));
  return address;
}

/// Runs `batch` across the processes over NCCL, on GPU buffers, and copies
/// the targets back.
int64_t runOverNccl(std::vector<CheckedProgram> &batch,
                    const ProcessOwnership &ownership,
                    const MpiGroupOptions &options, int process) {
  NcclGroupOptions ncclOptions;
  ncclOptions.control = options;
  llvm::Expected<std::unique_ptr<NcclGroup>> created =
      NcclGroup::create(MPI_COMM_WORLD, ownership, ncclOptions);
  if (!created)
    fail(process, created.takeError());
  NcclGroup &group = **created;
  CudaMemory memory(group.getDevice());
  std::vector<DeviceProgramRun> runs;
  for (CheckedProgram &checked : batch) {
    DeviceProgramRun run{&checked.program, {}, checked.type};
    for (auto &[rank, data] : checked.sources)
      if (group.getControl().holdsSource(rank))
        run.buffers.sources[rank] = upload(memory, data, process);
    for (auto &[rank, data] : checked.targets)
      if (group.getControl().holdsTarget(rank))
        run.buffers.targets[rank] = upload(memory, data, process);
    runs.push_back(std::move(run));
  }
  if (llvm::Error error = group.execute(runs))
    fail(process, std::move(error));
  for (auto [checked, run] : llvm::zip(batch, runs))
    for (auto &[rank, address] : run.buffers.targets) {
      std::vector<char> &data = checked.targets[rank];
      if (data.empty())
        continue;
      if (llvm::Error error =
              group.getDevice()->copyToHost(data.data(), address, data.size()))
        fail(process, std::move(error));
    }
  return group.getBytesSent();
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int process = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  int perType = argc > 2 ? std::atoi(argv[2]) : 20;
  llvm::StringRef transport = argc > 3 ? argv[3] : "mpi";
  if (transport != "mpi" && transport != "mpi-staged" && transport != "nccl")
    fail(process, makeError("the transport is mpi, mpi-staged or nccl"));
  bool overNccl = transport == "nccl";
  double timeoutSeconds = argc > 4 ? std::atof(argv[4]) : 600;
  std::mt19937_64 rng(seed);
  int64_t programs = 0, bytesCompared = 0, bytesSent = 0;
  for (DType type : kAllDTypes) {
    std::vector<TransferPlan> plans =
        testing::makeExecutionPlans(rng, type, perType);
    llvm::append_range(plans, makeLongCopyPlans(type));
    for (size_t first = 0; first < plans.size(); first += 4) {
      // A batch of up to four plans, on one ownership of the widest world.
      std::vector<CheckedProgram> batch;
      int64_t sourceWorld = 0, targetWorld = 0;
      for (size_t i = first; i < std::min(first + 4, plans.size()); ++i) {
        batch.push_back(prepare(plans[i], type, seed * 1000 + i));
        sourceWorld = std::max(sourceWorld,
                               getWorld(batch.back().program.sourceElements));
        targetWorld = std::max(targetWorld,
                               getWorld(batch.back().program.targetElements));
      }
      ProcessOwnership ownership{drawProcesses(rng, sourceWorld, processes),
                                 drawProcesses(rng, targetWorld, processes)};
      MpiGroupOptions options;
      options.timeoutSeconds = timeoutSeconds;
      options.singleCopy = transport == "mpi";
      options.threads = 2;
      bytesSent += (overNccl ? runOverNccl : runOverMpi)(batch, ownership,
                                                         options, process);
      auto holdsTarget = [&](int64_t rank) {
        return ownership.targetProcesses[rank] == process;
      };
      for (CheckedProgram &checked : batch)
        for (auto &[rank, data] : checked.targets) {
          if (!holdsTarget(rank))
            continue;
          const std::vector<char> &want = checked.expected[rank];
          for (size_t byte = 0; byte < data.size(); ++byte)
            if (data[byte] != want[byte]) {
              std::fprintf(stderr,
                           "process %d: plan '%s' (%s): target rank %lld "
                           "differs from the single-process run at byte "
                           "%zu\n",
                           process, checked.name.c_str(),
                           getSafetensorsName(type).str().c_str(),
                           static_cast<long long>(rank), byte);
              MPI_Abort(MPI_COMM_WORLD, 1);
            }
          bytesCompared += data.size();
        }
      programs += batch.size();
    }
  }
  int64_t totals[2] = {bytesCompared, bytesSent};
  MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (process == 0)
    std::printf(
        "%s, %d processes: %lld programs, %lld target bytes bit-exact, "
        "%lld bytes between processes\n",
        transport.upper().c_str(), processes, static_cast<long long>(programs),
        static_cast<long long>(totals[0]), static_cast<long long>(totals[1]));
  MPI_Finalize();
  return 0;
}

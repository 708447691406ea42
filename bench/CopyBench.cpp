//===- CopyBench.cpp - Executor bandwidth against memcpy and libtorch -----===//
//
// Google Benchmark cases on the same bytes, reported as bytes/second:
//   * memcpy of the whole tensor (the roofline);
//   * our CPU executor extracting a row split, column splits whose shard rows
//     are 256 B and 4 KiB, bigcode and codegen, and resharding a 1 GiB map
//     set 4 -> 2 and 2 -> 4, on 1 and 2 threads;
//   * the DeepSpeed reference's loop over the same plan segments:
//     `target.as_strided(...).copy_(source.as_strided(...))` in libtorch,
//     on 1 and 2 intra-op threads;
//   * for the reshards, the reference's own method (spec §7.1): rebuild F
//     from the source pieces, then extract the target pieces, in libtorch.
// bench/run-benchmarks.py runs this binary and prints one table of GB/s and
// ratios.
//
// libtorch's OpenMP workers spin for a while after each parallel region; on a
// machine with few cores a spinning worker takes a core from whichever case
// runs next (measured: our single-thread column split at 5.7 GB/s instead of
// 9.7). The binary therefore runs with OMP_WAIT_POLICY=PASSIVE, re-executing
// itself to set it before the OpenMP runtime starts.
//
// Single-thread cases (memcpy, ours and torch alike) run pinned to one core:
// an unpinned thread here moves between cores and its bandwidth jumps
// between two levels a factor of two apart from one repetition to the next.
//
//===----------------------------------------------------------------------===//

#include "CopyWorkloads.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Compose.h"

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

using namespace ucp;
using namespace ucp::testing;

namespace {

/// Allocates on 64-byte boundaries, as PyTorch's CPU allocator does for the
/// tensors the reference's loop runs on. glibc's malloc returns large
/// blocks 16 bytes past a page boundary, where every 256-byte run of a
/// column split spans five cache lines instead of four.
template <typename T> struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U> CacheLineAllocator(const CacheLineAllocator<U> &) {}
  T *allocate(size_t count) {
    return static_cast<T *>(
        ::operator new(count * sizeof(T), std::align_val_t(64)));
  }
  void deallocate(T *pointer, size_t) {
    ::operator delete(pointer, std::align_val_t(64));
  }
  bool operator==(const CacheLineAllocator &) const { return true; }
  bool operator!=(const CacheLineAllocator &) const { return false; }
};

/// The bytes of one tensor or shard.
template <typename T> using Buffer = std::vector<T, CacheLineAllocator<T>>;

/// A workload: plans of some parameters and their buffers, filled once.
struct Workload {
  std::vector<TransferPlan> plans;
  /// For reshards: the plans through the full tensor, and its buffers.
  std::vector<TransferPlan> rebuilds, extracts;
  std::vector<Buffer<float>> fulls;
  std::vector<CopyProgram> programs;
  std::vector<std::map<int64_t, Buffer<float>>> sources, targets;
  int64_t bytes = 0;
};

/// Pins the calling thread to the core it runs on while `threads` is 1, and
/// restores its affinity at the end of the scope.
class SingleThreadPin {
public:
  explicit SingleThreadPin(unsigned threads) {
    if (threads != 1 ||
        pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) != 0)
      return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    pinned = pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
  }
  ~SingleThreadPin() {
    if (pinned)
      pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  }

private:
  cpu_set_t saved;
  bool pinned = false;
};

Workload makeWorkload(const std::vector<ParamMap> &from,
                      const std::vector<ParamMap> &to) {
  Workload w;
  SentElements sent;
  for (size_t i = 0; i < from.size(); ++i) {
    TransferPlan plan = *composeMaps(from[i], to[i], {}, sent);
    auto &sources = w.sources.emplace_back();
    auto &targets = w.targets.emplace_back();
    for (const auto &[rank, shape] : plan.sourceShards) {
      auto &data = sources[rank];
      data.resize(*getNumElements(shape));
      for (size_t e = 0; e < data.size(); ++e)
        data[e] = static_cast<float>(e % 1000);
    }
    for (const auto &[rank, shape] : plan.targetShards) {
      targets[rank].assign(*getNumElements(shape), 0.0f);
      w.bytes += *getNumElements(shape) * 4;
    }
    w.programs.push_back(lowerPlan(plan));
    w.plans.push_back(std::move(plan));
    if (from[i].worldSize > 1 && to[i].worldSize > 1) {
      ParamMap full = getFullTensorMap(from[i]);
      w.rebuilds.push_back(*composeMaps(from[i], full, {}, sent));
      w.extracts.push_back(*composeMaps(full, to[i], {}, sent));
      w.fulls.emplace_back(*getNumElements(full.logicalShape), 0.0f);
    }
  }
  return w;
}

std::map<std::string, Workload> &workloads() {
  static std::map<std::string, Workload> all = [] {
    std::map<std::string, Workload> w;
    for (const CopyWorkload &workload : getCopyWorkloads())
      w[workload.name] = makeWorkload(workload.from, workload.to);
    return w;
  }();
  return all;
}

void runOurs(benchmark::State &state, const std::string &name) {
  Workload &w = workloads().at(name);
  unsigned threads = state.range(0);
  SingleThreadPin pin(threads);
  for (auto _ : state) {
    for (size_t i = 0; i < w.programs.size(); ++i) {
      ProgramBuffers buffers;
      for (auto &[rank, data] : w.sources[i])
        buffers.sources[rank] = data.data();
      for (auto &[rank, data] : w.targets[i])
        buffers.targets[rank] = data.data();
      executeOnCpu({&w.programs[i], buffers, DType::F32}, threads);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * w.bytes);
}

torch::Tensor tensorOf(Buffer<float> &data) {
  return torch::from_blob(data.data(), {static_cast<int64_t>(data.size())},
                          torch::kFloat32);
}

/// What the DeepSpeed reference does per piece.
void copySegment(torch::Tensor from, torch::Tensor to, const Segment &s) {
  std::vector<int64_t> shape(s.shape.begin(), s.shape.end());
  to.as_strided(shape, {s.target.strides.begin(), s.target.strides.end()},
                s.target.offset)
      .copy_(from.as_strided(shape,
                             {s.source.strides.begin(), s.source.strides.end()},
                             s.source.offset));
}

void runTorch(benchmark::State &state, const std::string &name) {
  Workload &w = workloads().at(name);
  torch::set_num_threads(state.range(0));
  SingleThreadPin pin(state.range(0));
  for (auto _ : state) {
    for (size_t i = 0; i < w.plans.size(); ++i)
      for (const Segment &s : w.plans[i].segments)
        copySegment(tensorOf(w.sources[i].at(s.sourceRank)),
                    tensorOf(w.targets[i].at(s.targetRank)), s);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * w.bytes);
}

/// The reference's reshard: rebuild F, then extract the target, both with
/// the as_strided().copy_() loop.
void runTorchThroughFull(benchmark::State &state, const std::string &name) {
  Workload &w = workloads().at(name);
  torch::set_num_threads(state.range(0));
  SingleThreadPin pin(state.range(0));
  for (auto _ : state) {
    for (size_t i = 0; i < w.rebuilds.size(); ++i) {
      torch::Tensor full = tensorOf(w.fulls[i]);
      for (const Segment &s : w.rebuilds[i].segments)
        copySegment(tensorOf(w.sources[i].at(s.sourceRank)), full, s);
      for (const Segment &s : w.extracts[i].segments)
        copySegment(full, tensorOf(w.targets[i].at(s.targetRank)), s);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * w.bytes);
}

void runMemcpy(benchmark::State &state, const std::string &name) {
  Workload &w = workloads().at(name);
  Buffer<char> from(w.bytes), to(w.bytes);
  std::memset(from.data(), 1, w.bytes);
  SingleThreadPin pin(1);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), w.bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * w.bytes);
}

/// Registers the cases of each workload so that the two cases a ratio of
/// the table compares run one after the other (run-benchmarks.py pairs
/// them within a run of the binary): ours and torch on one thread, then
/// memcpy, then ours and torch on two threads, then the reshard through F.
/// With UCP_BENCH_TORCH_FIRST set, torch runs before ours in each pair, so
/// that alternate runs cancel whatever running second does to a case.
int registerAll() {
  bool torchFirst = std::getenv("UCP_BENCH_TORCH_FIRST") != nullptr;
  for (const CopyWorkload &workload : getCopyWorkloads()) {
    const std::string &n = workload.name;
    auto add = [&](const std::string &kind, auto function, int threads) {
      benchmark::RegisterBenchmark((kind + "/" + n).c_str(), function, n)
          ->Arg(threads)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.3)
          ->UseRealTime();
    };
    auto addPair = [&](int threads) {
      if (torchFirst)
        add("torch", runTorch, threads);
      add("ours", runOurs, threads);
      if (!torchFirst)
        add("torch", runTorch, threads);
    };
    addPair(1);
    add("memcpy", runMemcpy, 1);
    addPair(2);
    if (n.rfind("reshard", 0) == 0)
      add("torchfull", runTorchThroughFull, 1);
  }
  return 0;
}

int registered = registerAll();

} // namespace

int main(int argc, char **argv) {
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
    perror("ucp-copy-bench: re-executing with OMP_WAIT_POLICY=PASSIVE");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

//===- CpuExecutor.h - Running copy programs on the CPU ---------*- C++ -*-===//
//
// Runs a copy program over raw buffers with a pool of threads: copies are
// shared out in order of size (copies with short runs in bands of rows, in
// source order, for cache reuse); a copy whose innermost dimension is
// contiguous on both sides moves whole runs (with streaming stores when the
// copy is large and unscaled, as glibc's memcpy does for large copies),
// anything else goes element by element through a tight strided loop; a
// factor other than 1 (the copy's scale raised to the run's power) is
// applied to the written elements; fills write zeros.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_CPUEXECUTOR_H
#define UCP_ENGINE_CPUEXECUTOR_H

#include "ucp/Engine/Executor.h"

namespace ucp {

/// A thread of the CPU executor is started for at least this much work:
/// starting one costs tens of microseconds, the time to copy about as much.
/// Without it a checkpoint of many small tensors ran slower on two threads
/// than on one.
constexpr int64_t kDefaultBytesPerThread = int64_t(1) << 20;

/// Runs `run` on the CPU with up to `threads` threads (0: every core this
/// process may run on): one per `bytesPerThread` bytes of work at most, and
/// fewer where threads cannot be started. A factor other than 1 on a type
/// that is not floating point is an error the caller must have refused
/// (checkFactors).
void executeOnCpu(const ProgramRun &run, unsigned threads = 0,
                  int64_t bytesPerThread = kDefaultBytesPerThread);

/// The CPU as an executor: each run of a batch in turn, on the threads it
/// was made with.
class CpuExecutor final : public Executor {
public:
  explicit CpuExecutor(unsigned threads = 0,
                       int64_t bytesPerThread = kDefaultBytesPerThread)
      : threads(threads), bytesPerThread(bytesPerThread) {}
  llvm::Error execute(llvm::ArrayRef<ProgramRun> batch) override;

private:
  unsigned threads;
  int64_t bytesPerThread;
};

} // namespace ucp

#endif // UCP_ENGINE_CPUEXECUTOR_H

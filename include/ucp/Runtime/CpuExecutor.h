//===- CpuExecutor.h - Running copy programs on the CPU ---------*- C++ -*-===//
//
// Runs a copy program over raw buffers with a pool of threads: copies are
// shared out in order of size (copies with short runs in bands of rows, in
// source order, for cache reuse); a copy whose innermost dimension is
// contiguous on both sides moves whole runs (with streaming stores when the
// copy is large and unscaled, as glibc's memcpy does for large copies),
// anything else goes element by element through a tight strided loop; a
// factor other than 1 is applied to the written elements; fills write zeros.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_RUNTIME_CPUEXECUTOR_H
#define UCP_RUNTIME_CPUEXECUTOR_H

#include "ucp/Runtime/CopyProgram.h"
#include "ucp/Runtime/DType.h"

namespace ucp {

/// Buffers by rank: sources are read, targets written.
struct ProgramBuffers {
  std::map<int64_t, const void *> sources;
  std::map<int64_t, void *> targets;
};

/// A thread of the CPU executor is started for at least this much work:
/// starting one costs tens of microseconds, the time to copy about as much.
/// Without it a checkpoint of many small tensors ran slower on two threads
/// than on one.
constexpr int64_t kDefaultBytesPerThread = int64_t(1) << 20;

/// Runs `program` on `buffers` of elements of `type` with up to `threads`
/// threads (0: every core this process may run on): one per
/// `bytesPerThread` bytes of work at most, and fewer where threads cannot
/// be started. A factor other than 1 on a type that is not floating point
/// is an error the caller must have refused.
void executeOnCpu(const CopyProgram &program, const ProgramBuffers &buffers,
                  DType type, unsigned threads = 0,
                  int64_t bytesPerThread = kDefaultBytesPerThread);

} // namespace ucp

#endif // UCP_RUNTIME_CPUEXECUTOR_H

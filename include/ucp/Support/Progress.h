//===- Progress.h - How jobs report progress, and are stopped ---*- C++ -*-===//
//
// Every long job reports (done, total, bytes written) to a function its
// caller gives, about once a second, from the thread that runs the job
// (a process group's progress travels from there: GroupProgress.h). The
// function may stop the job (a
// Python callback that raised, say): the job then fails before anything
// takes its final name, as on any other error.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_PROGRESS_H
#define UCP_SUPPORT_PROGRESS_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>

namespace ucp {

/// Called with (units done, units in all, bytes written so far); returns
/// false to stop the job.
using ProgressFunction = std::function<bool(size_t, size_t, int64_t)>;

/// The error of a job its progress function stopped.
llvm::Error makeStoppedError();

/// Calls `progress`, if set, with (`done`, `total`, `bytes`); the error a
/// stopped job fails with when it returns false.
llvm::Error reportProgress(const ProgressFunction &progress, size_t done,
                           size_t total, int64_t bytes);

} // namespace ucp

#endif // UCP_SUPPORT_PROGRESS_H

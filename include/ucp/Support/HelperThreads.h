//===- HelperThreads.h - Threads kept for parallel work ---------*- C++ -*-===//
//
// The CPU executor runs each copy program on the calling thread and a few
// helpers. Starting and joining a thread costs about as long as copying a
// megabyte, and a caller that extracts one shard at a time (the Python
// module's everyday call) paid it on every call: the helpers are started
// once and kept, waiting (docs/Execution.md has the measurement).
//
// Why not llvm::ThreadPool: it starts its threads with llvm::thread, which
// ends the process where a thread cannot be started (a process at its
// limit of threads); here such a thread's share is left to the others.
// And a process forked after the helpers started (Python's multiprocessing)
// has none of them: the child starts its own.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_HELPERTHREADS_H
#define UCP_SUPPORT_HELPERTHREADS_H

#include "llvm/ADT/STLFunctionalExtras.h"

namespace ucp {

/// Runs `work` on the calling thread and on up to `helpers` helper threads
/// at once, and returns when every one has returned. `work` shares itself
/// out (each call takes what is left). Helpers are kept between calls; a
/// call made while another uses them starts threads of its own, and a
/// thread that cannot be started leaves its share to the others: the
/// result is the same, only slower.
void runOnHelperThreads(unsigned helpers, llvm::function_ref<void()> work);

} // namespace ucp

#endif // UCP_SUPPORT_HELPERTHREADS_H

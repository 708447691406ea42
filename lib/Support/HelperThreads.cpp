//===- HelperThreads.cpp - Threads kept for parallel work -----------------===//

#include "ucp/Support/HelperThreads.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <pthread.h>
#include <unistd.h>
#include <vector>

using namespace ucp;

namespace {

/// The helpers of one process, waiting for the next run.
struct HelperPool {
  explicit HelperPool(pid_t owner) : owner(owner) {}

  /// The process that started the helpers: a forked child has none.
  const pid_t owner;
  /// Held by the run using the helpers.
  std::mutex inUse;
  /// Guards everything below.
  std::mutex lock;
  std::condition_variable wake, finished;
  unsigned started = 0;
  /// Bumped by each run: a helper that sees it change joins the run.
  uint64_t generation = 0;
  /// The current run: its work, the helpers it asked for, how many took a
  /// share and how many of those are done.
  llvm::function_ref<void()> *work = nullptr;
  unsigned wanted = 0, joined = 0, done = 0;
};

/// A helper's start: the pool, and the generation before the run that
/// started it (which it joins).
struct HelperStart {
  HelperPool *pool;
  uint64_t seen;
};

void *helperMain(void *argument) {
  HelperStart start = *static_cast<HelperStart *>(argument);
  delete static_cast<HelperStart *>(argument);
  HelperPool &pool = *start.pool;
  std::unique_lock<std::mutex> guard(pool.lock);
  uint64_t seen = start.seen;
  while (true) {
    pool.wake.wait(guard, [&] { return pool.generation != seen; });
    seen = pool.generation;
    if (pool.joined == pool.wanted)
      continue;
    ++pool.joined;
    llvm::function_ref<void()> *work = pool.work;
    guard.unlock();
    (*work)();
    guard.lock();
    if (++pool.done == pool.wanted)
      pool.finished.notify_one();
  }
  return nullptr;
}

/// This process's pool. The pool is never destroyed: helpers wait on it
/// until the process ends. A child forked from a process with helpers
/// makes a new one.
HelperPool &getPool() {
  static std::atomic<HelperPool *> current{nullptr};
  pid_t self = getpid();
  HelperPool *pool = current.load(std::memory_order_acquire);
  while (!pool || pool->owner != self) {
    auto *fresh = new HelperPool(self);
    if (current.compare_exchange_strong(pool, fresh,
                                        std::memory_order_acq_rel))
      return *fresh;
    delete fresh; // Another thread installed one: `pool` now holds it.
  }
  return *pool;
}

/// Runs `work` here and on up to `helpers` threads started for this call.
void runOnNewThreads(unsigned helpers, llvm::function_ref<void()> work) {
  auto entry = [](void *argument) -> void * {
    (*static_cast<llvm::function_ref<void()> *>(argument))();
    return nullptr;
  };
  std::vector<pthread_t> started;
  for (unsigned t = 0; t < helpers; ++t) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, entry, &work) != 0)
      break;
    started.push_back(thread);
  }
  work();
  for (pthread_t thread : started)
    pthread_join(thread, nullptr);
}

/// Starts helpers until `pool` has `helpers`, or one cannot be started.
/// Called with pool.lock held, before the run's generation is bumped.
void growPool(HelperPool &pool, unsigned helpers) {
  while (pool.started < helpers) {
    auto *start = new HelperStart{&pool, pool.generation};
    pthread_t thread;
    if (pthread_create(&thread, nullptr, helperMain, start) != 0) {
      delete start;
      return;
    }
    pthread_detach(thread);
    ++pool.started;
  }
}

} // namespace

void ucp::runOnHelperThreads(unsigned helpers,
                             llvm::function_ref<void()> work) {
  if (helpers == 0)
    return work();
  HelperPool &pool = getPool();
  std::unique_lock<std::mutex> exclusive(pool.inUse, std::try_to_lock);
  if (!exclusive)
    return runOnNewThreads(helpers, work);
  {
    std::lock_guard<std::mutex> guard(pool.lock);
    growPool(pool, helpers);
    pool.work = &work;
    pool.wanted = std::min(helpers, pool.started);
    pool.joined = pool.done = 0;
    ++pool.generation;
  }
  pool.wake.notify_all();
  work();
  std::unique_lock<std::mutex> guard(pool.lock);
  // `work` has taken all there was: a helper still waking would find
  // nothing left, so the run waits only for those that joined. Waking one
  // can take longer than a whole run (docs/Execution.md).
  pool.wanted = pool.joined;
  pool.finished.wait(guard, [&] { return pool.done == pool.wanted; });
  pool.work = nullptr;
}

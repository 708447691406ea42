//===- HelperThreadsTest.cpp - The threads the executor keeps -------------===//

#include "ucp/Support/HelperThreads.h"

#include "gtest/gtest.h"

#include <atomic>
#include <mutex>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace ucp;

namespace {

/// Runs `runs` runs of `helpers` helpers, each sharing out `shares` shares
/// of work; returns the threads that took one (by thread id: a pthread_t is
/// reused once its thread is joined), and expects every share of every run
/// taken once.
std::set<pid_t> runSharedWork(unsigned helpers, int runs, int shares) {
  std::mutex lock;
  std::set<pid_t> threads;
  for (int run = 0; run < runs; ++run) {
    std::atomic<int> next{0}, taken{0};
    runOnHelperThreads(helpers, [&] {
      for (int share = next++; share < shares; share = next++) {
        ++taken;
        std::lock_guard<std::mutex> guard(lock);
        threads.insert(gettid());
      }
    });
    EXPECT_EQ(taken.load(), shares) << "run " << run;
  }
  return threads;
}

} // namespace

TEST(HelperThreads, EveryRunIsDoneBeforeItReturns) {
  EXPECT_GE(runSharedWork(3, 200, 64).size(), 1u);
  EXPECT_EQ(runSharedWork(0, 3, 8), std::set<pid_t>{gettid()});
}

TEST(HelperThreads, HelpersAreKeptBetweenRuns) {
  // Every run's helpers wait for one another: each share blocks until all
  // four threads have taken one, so every run uses four threads. Kept
  // helpers mean the same three across 50 runs.
  std::set<pid_t> seen;
  std::mutex lock;
  for (int run = 0; run < 50; ++run) {
    std::atomic<int> arrived{0};
    runOnHelperThreads(3, [&] {
      ++arrived;
      while (arrived.load() < 4)
        std::this_thread::yield();
      std::lock_guard<std::mutex> guard(lock);
      seen.insert(gettid());
    });
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(HelperThreads, ARunDoesNotWaitForHelpersStillWaking) {
  // The caller's share takes everything at once; a helper that wakes after
  // that finds the run over and never calls `work`. Waiting for each to
  // wake, every run would call it on all three.
  std::atomic<int> calls{0};
  for (int run = 0; run < 200; ++run)
    runOnHelperThreads(2, [&] { ++calls; });
  EXPECT_GE(calls.load(), 200);
  EXPECT_LT(calls.load(), 600);
}

TEST(HelperThreads, ConcurrentCallersBothFinish) {
  // One caller holds the kept helpers; the other starts its own.
  std::thread other([] { runSharedWork(2, 100, 32); });
  runSharedWork(2, 100, 32);
  other.join();
}

TEST(HelperThreads, AForkedChildStartsItsOwn) {
  runSharedWork(2, 5, 16); // The parent's helpers are started.
  pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    // A child waiting on its parent's helpers, which it does not have,
    // would hang: the alarm ends it.
    alarm(20);
    std::atomic<int> arrived{0};
    runOnHelperThreads(2, [&] {
      ++arrived;
      while (arrived.load() < 3)
        std::this_thread::yield();
    });
    _exit(arrived.load() == 3 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "the child was ended by a signal";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

//===- BenchTiming.h - Best-of-N wall-clock timing --------------*- C++ -*-===//

#ifndef UCP_BENCH_BENCHTIMING_H
#define UCP_BENCH_BENCHTIMING_H

#include <algorithm>
#include <chrono>

namespace ucp::bench {

/// Returns the best wall-clock time of `repeats` runs of `fn`, in seconds.
template <typename Fn> double timeBest(int repeats, Fn fn) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  return best;
}

} // namespace ucp::bench

#endif // UCP_BENCH_BENCHTIMING_H

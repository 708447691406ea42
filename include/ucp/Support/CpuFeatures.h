//===- CpuFeatures.h - Vector extensions chosen at run time ----*- C++ -*-===//
//
// The project builds for baseline x86-64; the loops that run over every
// byte of a checkpoint (copies, value scans, weight-master comparisons)
// have variants built for AVX2 or AVX-512, chosen once at run time here.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_CPUFEATURES_H
#define UCP_SUPPORT_CPUFEATURES_H

#include <atomic>

namespace ucp {

/// Set, the vector variants are not chosen: tests run the baseline loops
/// on a processor that has the extensions, to check them against the same
/// reference.
inline std::atomic<bool> &baselineLoopsOnly() {
  static std::atomic<bool> only{false};
  return only;
}

#if defined(__x86_64__)
#define UCP_HAVE_X86_VECTOR_PATHS 1

/// Whether this processor runs AVX2 instructions.
inline bool hasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has && !baselineLoopsOnly().load(std::memory_order_relaxed);
}

/// Whether this processor runs AVX-512 Foundation instructions.
inline bool hasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has && !baselineLoopsOnly().load(std::memory_order_relaxed);
}
#endif

} // namespace ucp

#endif // UCP_SUPPORT_CPUFEATURES_H

//===- CopyWorkloads.h - Layouts of the copy benchmarks ---------*- C++ -*-===//
//
// The workloads of the copy benchmarks, on the CPU (bench/CopyBench.cpp) and
// on a GPU (ucp-gpu-check): extracting a row split, column splits whose
// shard rows are 256 B and 4 KiB, bigcode and codegen from their full
// tensors (64 MiB of f32 each), and resharding a 1 GiB map set 4 -> 2 and
// 2 -> 4.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TEST_UNIT_COPYWORKLOADS_H
#define UCP_TEST_UNIT_COPYWORKLOADS_H

#include "ucp/Map/ParamMap.h"

#include <string>
#include <vector>

namespace ucp::testing {

/// Parameters moved from the layouts `from` to the layouts `to`.
struct CopyWorkload {
  std::string name;
  std::vector<ParamMap> from, to;
};

/// The benchmark workloads, in the order their tables print them.
std::vector<CopyWorkload> getCopyWorkloads();

} // namespace ucp::testing

#endif // UCP_TEST_UNIT_COPYWORKLOADS_H

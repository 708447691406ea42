//===- HostKernels.h - Generated CUDA compiled for the host -----*- C++ -*-===//
//
// Turns the CUDA source emitted for copy programs into host C++: a prelude
// defines the CUDA built-ins it uses (blockIdx, threadIdx, blockDim,
// gridDim) and one entry per kernel runs a whole grid by calling the kernel
// once per (block, thread). The kernels share nothing between threads, so
// running the threads one after another computes what the GPU computes,
// except for the arithmetic of scaled elements, which here is the host's.
// Plain C++ and POSIX only: the stand-in CUDA libraries (test/fakecuda) use
// it without LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TEST_UNIT_HOSTKERNELS_H
#define UCP_TEST_UNIT_HOSTKERNELS_H

#include <string>

namespace ucp::testing {

/// The host entry of the kernel `kernel` is `getHostEntryName(kernel)`: it
/// runs a grid of `blocks` x `threads` with the kernel's parameters given
/// as cuLaunchKernel takes them (an array of pointers to each argument).
using HostKernelEntry = void (*)(unsigned blocks, unsigned threads,
                                 void **params);
std::string getHostEntryName(const std::string &kernel);

/// Compiles the CUDA source `cudaSource` for the host into the shared
/// library `library` (its C++ is written next to it) with the compiler the
/// project was built with. Returns false with the compiler's output in
/// `log` on failure.
bool compileKernelsForHost(const std::string &cudaSource,
                           const std::string &library, std::string &log);

} // namespace ucp::testing

#endif // UCP_TEST_UNIT_HOSTKERNELS_H

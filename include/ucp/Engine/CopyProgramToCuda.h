//===- CopyProgramToCuda.h - Copy programs as CUDA kernels ------*- C++ -*-===//
//
// Emits CUDA C++ for copy programs: one kernel per program, launched once
// over a table of copy descriptors (every copy between every pair of its
// buffers, and its fills), with a grid-stride loop over work units. One
// launch per program, not per buffer pair, because each launch costs about
// 4 microseconds of ramp and drain on an H200, as long as moving 8 MB
// (docs/Execution.md). A copy whose innermost run is contiguous and aligned
// on both sides moves units of two 16-byte vectors (32-byte aligned) or one
// (16-byte aligned); the scale is fused into the copy, with the same
// f16/bf16 arithmetic as the CPU executor (ucp/Element/FloatBits.h is
// pasted into the source). The source needs no header, so NVRTC compiles
// it as is.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_COPYPROGRAMTOCUDA_H
#define UCP_ENGINE_COPYPROGRAMTOCUDA_H

#include "ucp/Element/DType.h"
#include "ucp/Plan/CopyProgram.h"

namespace ucp {

/// The one kernel launch of a program in an emitted module. The kernel
/// takes one argument: the device address of its buffer table, an array
/// of the addresses of `sourceBuffers` then of `targetBuffers`.
struct CudaLaunch {
  /// The extern "C" kernel name.
  std::string kernel;
  /// Index of the program in the emitted list.
  size_t program = 0;
  /// Ranks of the buffers the kernel reads and writes, in table order.
  std::vector<int64_t> sourceBuffers, targetBuffers;
  /// Work units (elements, or one or two 16-byte vectors) the grid covers.
  int64_t units = 0;
};

/// The grid of one launch: its kernel's grid-stride loop covers any number
/// of work units with at most 65535 blocks.
struct CudaGrid {
  unsigned blocks = 1;
  unsigned threadsPerBlock = 256;
};

/// The grid a launch of `units` work units runs on: a thread per unit in
/// blocks of 256, up to 65535 blocks.
CudaGrid getLaunchGrid(int64_t units);

/// The emitted source and how to launch it.
struct CudaModule {
  std::string source;
  std::vector<CudaLaunch> launches;
};

/// How kernels decode a work unit's place in its copy.
enum class CudaUnitIndex {
  /// In 32 bits where the launch has fewer than 2^32 units, else 64.
  Narrowest,
  /// Always in 64 bits: what a launch of 2^32 units or more runs, for
  /// testing that path on small launches.
  Wide,
};

/// Emits the kernels of `programs` (named for diagnostics) moving elements
/// of `type`. `unitIndex` says how kernels decode work units. Refuses, naming
/// the program, a copy or fill of more than kMaxCopyRank dimensions (which
/// lowerPlan never makes: the descriptors hold that many), a factor
/// `checkFactors` refuses, and a buffer whose bytes int64 cannot count.
llvm::Expected<CudaModule>
emitCuda(llvm::ArrayRef<std::pair<std::string, CopyProgram>> programs,
         DType type, CudaUnitIndex unitIndex = CudaUnitIndex::Narrowest);

} // namespace ucp

#endif // UCP_ENGINE_COPYPROGRAMTOCUDA_H

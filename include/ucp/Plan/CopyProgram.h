//===- CopyProgram.h - Plans lowered for execution --------------*- C++ -*-===//
//
// A copy program is a plan lowered for an executor (CPU, CUDA, a process
// group): per pair of (source buffer, target buffer) a table of strided
// copies, each with the scale between the two sides, plus fills per target
// buffer. A program serves every state of its parameter: an executor
// raises each scale to the power of the state it moves (getCopyFactor).
// Execution-level coalescing lives here and never in a stored map: dimensions
// are reordered by target stride and merged where contiguous on both sides, so
// the innermost dimension is the longest contiguous run; huge copies are split
// so that threads (or thread blocks) share them.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_PLAN_COPYPROGRAM_H
#define UCP_PLAN_COPYPROGRAM_H

#include "ucp/Element/DType.h"
#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// `target[dst view] = source[src view] * scale^p`, in elements, where p is
/// the power of the scale the moved tensor carries.
struct StridedCopy {
  Extents shape;
  StridedView source;
  StridedView target;
  /// s_target / s_source, as in the plan's segment.
  double scale = 1.0;
};

/// The factor a copy of scale `scale` multiplies elements by when it moves
/// a tensor carrying the scale's power `scalePower` (1 for a parameter, -1
/// and -2 for Adam's moments, spec §2.1).
double getCopyFactor(double scale, int scalePower);

/// The copies from one source buffer into one target buffer.
struct BufferPairCopies {
  int64_t sourceBuffer = 0;
  int64_t targetBuffer = 0;
  std::vector<StridedCopy> copies;
};

/// Target elements to initialise (to zero).
struct StridedFill {
  int64_t targetBuffer = 0;
  Extents shape;
  StridedView target;
};

/// A plan ready to execute. Buffers are numbered by rank on each side.
/// Copies and fills have at most kMaxCopyRank dimensions.
struct CopyProgram {
  std::vector<BufferPairCopies> pairs;
  /// Whether `pairs` are in (source, target) order, each pair once, as
  /// lowerPlan makes them: then getPairsInto finds a target's by binary
  /// search, so that a job writing thousands of targets one at a time
  /// does not scan every pair for each.
  bool pairsSorted = false;
  std::vector<StridedFill> fills;
  /// Elements of every source and target buffer.
  std::map<int64_t, int64_t> sourceElements;
  std::map<int64_t, int64_t> targetElements;
};

/// The most elements one copy of a program holds; bigger copies are split
/// along their outermost dimension.
constexpr int64_t kMaxCopyElements = int64_t(1) << 20;

/// The most dimensions a copy or fill of a program has (the CUDA kernels'
/// descriptors hold this many). A view with more, once its contiguous
/// dimensions are merged, is split into one copy per index of its outer
/// dimensions: exact on every executor, whatever the rank.
constexpr size_t kMaxCopyRank = 8;

/// The pairs of `program` that write target buffer `target`, in program
/// order.
std::vector<const BufferPairCopies *> getPairsInto(const CopyProgram &program,
                                                   int64_t target);

/// The part of `program` that writes target buffer `target`: its pairs and
/// fills, and of the targets only that one's size; what a caller making one
/// target shard runs.
CopyProgram getProgramInto(const CopyProgram &program, int64_t target);

/// The copy programs of a transfer, by parameter name.
using TransferPrograms = std::map<std::string, CopyProgram>;

/// Lowers `plan`: normalizes its segments, splits huge copies and groups
/// them by buffer pair.
CopyProgram lowerPlan(const TransferPlan &plan);

/// Returns `program` with every copy's scale raised to `scalePower`: what an
/// executor that fixes factors ahead of running (generated kernels) runs at
/// power 1.
CopyProgram raiseScales(const CopyProgram &program, int scalePower);

/// Refuses to move a tensor carrying the scale's power `scalePower` other
/// than 1 through a plan that rescales it: Adam's lr and eps live in the
/// scaled coordinate, so rescaled moments alone would change the training
/// trajectory (spec §2.1). A scaled parameter (power 1) always passes.
llvm::Error checkScalePower(const TransferPlan &plan, int scalePower);
/// The same for the program of parameter `name`.
llvm::Error checkScalePower(const CopyProgram &program, llvm::StringRef name,
                            int scalePower);

/// Refuses a program whose copies, moving a tensor of `type` that carries
/// the scale's power `scalePower`, multiply by a factor
/// `isRepresentableFactor` rejects (a scale on an integer tensor, or one
/// that underflows or overflows the float type), naming parameter `name`
/// and the ranks of the copy.
llvm::Error checkFactors(const CopyProgram &program, DType type,
                         llvm::StringRef name, int scalePower = 1);

/// Returns `plan` rewritten in its executable form: what `lowerPlan` does
/// to the copies (dimensions normalized, huge copies split), each scale
/// raised to `scalePower`, kept as a plan, copies ordered by target then
/// source buffer.
TransferPlan getExecutablePlan(const TransferPlan &plan, int scalePower = 1);

/// One contiguous run of a program that only concatenates: `elements`
/// from `sourceOffset` of source buffer `sourceBuffer`.
struct ContiguousRun {
  int64_t sourceBuffer = 0;
  int64_t sourceOffset = 0;
  int64_t elements = 0;
};

/// Returns the runs that, one after the other, make up target buffer
/// `target`, if `program` writes nothing else and writes it only by
/// unscaled copies of contiguous runs that tile it in order, with no fill:
/// then the target can be written straight from the sources (a file by
/// pwrite from mapped inputs) without executing into memory first.
std::optional<std::vector<ContiguousRun>>
getContiguousRuns(const CopyProgram &program, int64_t target);

} // namespace ucp

#endif // UCP_PLAN_COPYPROGRAM_H

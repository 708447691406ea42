//===- FragmentPrograms.h - Copy programs over a checkpoint's fragments -*- C++
//-*-===//
//
// A copy program planned from a parameter's map reads that parameter's
// fragments where the checkpoint's files hold them (memory-mapped). These
// run one target buffer of it at a time, a few megabytes of copies per
// batch, each batch's source pages released once done, so that memory
// holds the target and little of the inputs; and narrow fp32 results to
// the model's dtype.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_UNIVERSAL_FRAGMENTPROGRAMS_H
#define UCP_UNIVERSAL_FRAGMENTPROGRAMS_H

#include "ucp/IO/DeepSpeedCheckpoint.h"
#include "ucp/Runtime/CpuExecutor.h"

namespace ucp {

/// The fragments of `state` of `param`, per grid rank, as sources.
ProgramBuffers getFragmentSources(const DeepSpeedCheckpoint &checkpoint,
                                  const DeepSpeedParam &param,
                                  OptimizerState state);

/// The part of `whole` that writes target buffer `target` (of `elements`):
/// its fills, and its copies if `withCopies`.
CopyProgram selectTarget(const CopyProgram &whole, int64_t target,
                         int64_t elements, bool withCopies);

/// Runs the copies of `whole` (over fp32 elements) into target buffer
/// `target` (of `elements`) in batches, releasing the source pages of
/// `state` of `releasing` in `checkpoint` as each batch is done, if given.
void runIntoTarget(const DeepSpeedCheckpoint &checkpoint,
                   const CopyProgram &whole, int64_t target, int64_t elements,
                   const ProgramBuffers &buffers,
                   const DeepSpeedParam *releasing, OptimizerState state);

/// Writes `count` fp32 values of `from` to `to` as `type` (F32, BF16 or
/// F16), rounded to nearest even as torch's `copy_` does, in parallel.
void narrowFloat32(const float *from, int64_t count, DType type, char *to);

} // namespace ucp

#endif // UCP_UNIVERSAL_FRAGMENTPROGRAMS_H

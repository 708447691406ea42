//===- ProgramDriver.h - Copy programs into one target at a time -*- C++
//-*-===//
//
// How a job that writes its targets one at a time (a Universal state file,
// a partition of a ZeRO file, a tensor of an export) runs a parameter's
// copy program: the part that writes one target buffer, either as the runs
// of its mapped sources to write out straight (when it only concatenates
// contiguous runs, unscaled: each byte read once and copied once, by the
// kernel) or executed into the target in batches of a few megabytes,
// releasing each batch's source pages once done, so that memory holds the
// target and little of the inputs.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_PROGRAMDRIVER_H
#define UCP_ENGINE_PROGRAMDRIVER_H

#include "ucp/Engine/Executor.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace ucp {

/// Called when the bytes [data, data + bytes) of source buffer `rank` have
/// been read for the last time.
using ReleaseSource =
    llvm::function_ref<void(int64_t rank, const char *data, size_t bytes)>;

/// The part of `whole` that writes target buffer `target` (of `elements`):
/// its fills, and its copies if `withCopies`.
CopyProgram selectTarget(const CopyProgram &whole, int64_t target,
                         int64_t elements, bool withCopies);

/// Bytes of a source buffer.
struct SourcePiece {
  int64_t rank = 0;
  llvm::StringRef bytes;
};

/// The bytes that, written one after the other, make target buffer
/// `target` of `run`, read straight from its source buffers: when its
/// program only concatenates contiguous runs into that target, at factor 1
/// (getContiguousRuns); nothing otherwise.
std::optional<std::vector<SourcePiece>> getSourcePieces(const ProgramRun &run,
                                                        int64_t target);

/// Runs the copies and fills of `run` that write target buffer `target`
/// (`elements` elements, at `run.buffers.targets[target]`) on `executor`,
/// about 16 MiB of copies per batch, calling `release` with the source
/// bytes of each batch once it has run.
llvm::Error runIntoTarget(const ProgramRun &run, int64_t target,
                          int64_t elements, Executor &executor,
                          ReleaseSource release = nullptr);

/// As runIntoTarget, writing the target as `elements` elements of `type`
/// at `out`: straight where the run's type is `type`, else through a
/// buffer of the run's type, converted (convertElements).
llvm::Error runIntoTargetAs(ProgramRun run, int64_t target, int64_t elements,
                            DType type, char *out, Executor &executor,
                            ReleaseSource release = nullptr);

} // namespace ucp

#endif // UCP_ENGINE_PROGRAMDRIVER_H

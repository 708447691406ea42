//===- Transfer.h - Moving tensors between shard files ----------*- C++ -*-===//
//
// The engine of affine-run. Extract, rebuild and reshard are one operation:
// tensors laid out by source maps in source files become tensors laid out
// by target maps in target files. Extract's source (and rebuild's target)
// is the full tensor, one rank holding all of F. The copy programs come
// from the planner (ucp/Plan/Planner.h: maps verified, composed and
// lowered); the source files are read as a checkpoint
// (ShardFilesCheckpoint, checked against the maps) and each program runs
// on an executor (the CPU, the GPU or a process group) straight from the
// memory-mapped inputs into the memory-mapped outputs, so the only memory
// used beyond the files is the plan. Outputs are written under temporary
// names and renamed only when every parameter succeeded.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_JOBS_TRANSFER_H
#define UCP_JOBS_TRANSFER_H

#include "ucp/Support/Progress.h"
#include "ucp/Element/DType.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Plan/CopyProgram.h"
#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/Error.h"

#include <functional>

namespace ucp {

/// One side of a transfer: the maps and the file of each rank.
struct TransferSide {
  std::vector<ParamMap> maps;
  /// Where the maps come from (a map file, "the full tensor"), for messages.
  std::string mapOrigin = "the map";
  std::map<int64_t, std::string> files;
  /// Rank files already in a shard folder beyond the maps' world: a source
  /// folder holding them may be of another topology (accepted only with
  /// ignoreExtraTensors); a target folder holding them would mix two.
  std::vector<std::string> strayFiles;
};

struct TransferOptions {
  /// Where copies run.
  enum class Device { Cpu, Cuda } device = Device::Cpu;
  /// Worker threads (0: every core this process may run on).
  unsigned threads = 0;
  /// The power of the scale the tensors carry: 1 for parameters, -1 and -2
  /// for Adam's moments; the programs run at it. Every piece's scale raised
  /// to it, and its inverse, must be a factor the tensor's element type can
  /// take (isRepresentableFactor).
  int scalePower = 1;
  /// Compare every replicated block across all its holders first.
  bool checkReplicas = false;
  /// Accept source tensors no map describes, and source rank files beyond
  /// the maps' world (they are not read).
  bool ignoreExtraTensors = false;
  /// Wait until the outputs and their folder entries are on disk before
  /// returning (msync and fsync): a machine that crashes after the run
  /// still holds them. Off, they are left to the page cache.
  bool syncOutputs = true;
  /// The replica policy the plans are made with.
  ReplicaPolicy policy;
  /// The processes the transfer spans, or null for this process alone. With
  /// a group the device is the CPU and replicas are not compared.
  ProcessGroup *group = nullptr;
  /// Called about once a second with (parameters done, parameters, bytes
  /// written so far); with a group, by process 0 only, with its own bytes.
  ProgressFunction progress;
};

struct TransferStats {
  size_t parameters = 0;
  /// With a group, over all its processes.
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  double seconds = 0;
  /// With the CUDA device, what its kernels were compiled for: "sm_90"
  /// (machine code), or "compute_86" (PTX for a GPU newer than NVRTC).
  std::string gpuArchitecture;
};

/// Returns the side holding the full tensors of `maps` in `file`.
TransferSide getFullTensorSide(llvm::ArrayRef<ParamMap> maps,
                               llvm::StringRef file);

/// Returns the side of `maps` with one file `<dir>/rank_<r>.safetensors`
/// per rank of the largest world, and the rank files of `dir` beyond it.
TransferSide getShardSide(std::vector<ParamMap> maps, llvm::StringRef dir);

/// Moves every parameter from `source` to `target` with `programs`, the
/// copy program of each parameter by name (from planTransfers, which
/// verified both maps). Nothing is written unless everything succeeds.
llvm::Expected<TransferStats> runTransfer(const TransferSide &source,
                                          const TransferSide &target,
                                          const TransferPrograms &programs,
                                          const TransferOptions &options);

/// Writes the full tensors of every parameter of `maps` to `file`, filled
/// with pseudo-random finite values of `type` (parameter i from seed
/// `seed + i`): test data for the other commands.
llvm::Error writeRandomFullTensors(llvm::ArrayRef<ParamMap> maps,
                                   llvm::StringRef file, DType type,
                                   uint64_t seed);

} // namespace ucp

#endif // UCP_JOBS_TRANSFER_H

//===- Transfer.h - Moving tensors between shard files ----------*- C++ -*-===//
//
// The engine of affine-run. Extract, rebuild and reshard are one operation:
// tensors laid out by source maps in source files become tensors laid out
// by target maps in target files. Extract's source (and rebuild's target)
// is the full tensor, one rank holding all of F. The plans come from the
// reshard pipeline (ucp/Dialect/UCP/Transforms/ReshardPipeline.h: maps
// verified, composed and lowered to copy programs); the engine checks the
// files against the maps and executes each program straight from the
// memory-mapped inputs into the memory-mapped outputs, so the only memory
// used beyond the files is the plan. Outputs are written under temporary
// names and renamed only when every parameter succeeded.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_RUN_TRANSFER_H
#define UCP_RUN_TRANSFER_H

#include "ucp/Plan/TransferPlan.h"
#include "ucp/Runtime/CopyProgram.h"
#include "ucp/Runtime/CpuExecutor.h"
#include "ucp/Runtime/DType.h"

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

/// One parameter's copies as one process runs them: the program, the
/// buffers of the ranks this process holds, and the element type.
struct ProgramRun {
  const CopyProgram *program = nullptr;
  ProgramBuffers buffers;
  DType type = DType::F32;
};

/// The processes of a transfer that spans several (ucp/Distributed/
/// MpiTransfer.h implements it over MPI). Each process opens the source
/// files and writes the target files of the ranks it holds; every other
/// step is the single-process one, each followed by an agreement, so that
/// all processes fail together, before any output takes its name, when one
/// fails.
class TransferGroup {
public:
  virtual ~TransferGroup();
  /// This process's number, 0 for the one that reports progress.
  virtual int getProcess() const = 0;
  /// Whether this process holds source (target) rank `rank`.
  virtual bool holdsSource(int64_t rank) const = 0;
  virtual bool holdsTarget(int64_t rank) const = 0;
  /// Collective: success when every process passes success; else an error
  /// on every process, its own where it failed, the first failing
  /// process's otherwise.
  virtual llvm::Error agree(llvm::Error local) = 0;
  /// Collective: `values` becomes their element-wise maximum (sum) over
  /// the processes.
  enum class Reduction { Max, Sum };
  virtual llvm::Error reduce(std::vector<int64_t> &values,
                             Reduction reduction) = 0;
  /// Collective: runs every program of `batch`, moving what crosses
  /// processes between them, with up to `threads` threads per process.
  virtual llvm::Error execute(llvm::ArrayRef<ProgramRun> batch,
                              unsigned threads) = 0;
  /// The most target bytes one call of execute should move: what the
  /// processes hold in message buffers at once.
  virtual int64_t getBatchBytes() const = 0;
};

struct TransferOptions {
  /// Where copies run.
  enum class Device { Cpu, Cuda } device = Device::Cpu;
  /// Worker threads (0: every core this process may run on).
  unsigned threads = 0;
  /// The power of the scale the tensors carry: 1 for parameters, -1 and -2
  /// for Adam's moments; the programs must have been lowered with it. Every
  /// piece's scale raised to it, and its inverse, must be a factor the
  /// tensor's element type can take (isRepresentableFactor).
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
  TransferGroup *group = nullptr;
  /// Called about once a second with (parameters done, parameters, bytes
  /// written so far); with a group, by process 0 only, with its own bytes.
  std::function<void(size_t, size_t, int64_t)> progress;
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

/// Refuses a piece of `map` whose scale, raised to `scalePower`, or its
/// inverse is a factor elements of `type` cannot take, naming the
/// parameter, rank and piece: extract multiplies by the one, rebuild by the
/// other, and 1e-300 on F32 would give zeros one way and infinities the
/// other.
llvm::Error checkScalesFit(const ParamMap &map, DType type, int scalePower);

/// Writes the full tensors of every parameter of `maps` to `file`, filled
/// with pseudo-random finite values of `type` (parameter i from seed
/// `seed + i`): test data for the other commands.
llvm::Error writeRandomFullTensors(llvm::ArrayRef<ParamMap> maps,
                                   llvm::StringRef file, DType type,
                                   uint64_t seed);

/// Checks that every block replicated in `map` holds the same bytes on all
/// its holders (P2); `shards` gives each rank's shard data.
llvm::Error checkReplicas(const ParamMap &map,
                          const std::map<int64_t, const char *> &shards,
                          int64_t elementSize);

} // namespace ucp

#endif // UCP_RUN_TRANSFER_H

//===- CheckpointModel.h - A checkpoint that knows no format ----*- C++ -*-===//
//
// What every job reads, whatever wrote the files: a set of tensors, each
// with a name, a role in training, a map over the checkpoint's shards (its
// logical shape is the map's) and the states it holds under that map, each
// of one element type: the weight, the fp32 master, Adam's moments. A
// reader (a DeepSpeed ZeRO folder, a Universal folder, a set of
// safetensors files) binds every shard of every state to the bytes that
// hold it, memory-mapped; a job plans the maps into its target layout
// (ucp/Plan/Planner.h) and runs the programs on those bytes
// (ucp/Engine/Executor.h), then a writer lays the results out in its
// format. A new format costs a reader or a writer, not a stack.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CHECKPOINT_CHECKPOINTMODEL_H
#define UCP_CHECKPOINT_CHECKPOINTMODEL_H

#include "ucp/Element/DType.h"
#include "ucp/Map/ParamMap.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ucp {

struct CopyProgram;
struct ProgramRun;

/// What a tensor of a checkpoint holds. The first three are a trainable
/// parameter's optimizer states, in the order DeepSpeed's files hold them.
enum class TensorState {
  /// The fp32 master weight the optimizer updates.
  Master,
  /// Adam's first and second moments.
  ExpAvg,
  ExpAvgSq,
  /// The weight the model computes with (a module's tensor: bf16, fp16 or
  /// fp32), or a buffer.
  Weight,
};

/// The states of a trainable parameter's optimizer, in file order.
inline constexpr std::array<TensorState, 3> kOptimizerStates = {
    TensorState::Master, TensorState::ExpAvg, TensorState::ExpAvgSq};

/// The name of `state` in files and on command lines: "fp32", "exp_avg",
/// "exp_avg_sq", "param".
llvm::StringRef getStateName(TensorState state);

/// The state named `name`, if one is.
std::optional<TensorState> parseStateName(llvm::StringRef name);

/// Every state's name, for messages: "fp32, exp_avg, exp_avg_sq or param".
std::string listStateNames();

/// The power of the scale a state carries (spec §2.1): 1 for weights and
/// masters, -1 for exp_avg, -2 for exp_avg_sq. A copy program moving a
/// state raises each piece's scale to it.
int getScalePower(TensorState state);

/// A tensor of a checkpoint.
struct CheckpointTensor {
  /// How training treats it.
  enum class Role {
    /// Updated by the optimizer, which holds its master and moments.
    Trainable,
    /// A parameter that does not train (requires_grad=False).
    Frozen,
    /// A module buffer (a running statistic, a mask).
    Buffer,
  };

  std::string name;
  Role role = Role::Trainable;
  /// Its layout over the checkpoint's shards; the logical shape is F's.
  ParamMap map;
  /// The states it holds, each with its element type, in TensorState
  /// order.
  llvm::SmallVector<std::pair<TensorState, DType>, 4> states;

  /// The element type of `state`, if the tensor holds it.
  std::optional<DType> getType(TensorState state) const;
};

/// The map of tensor `name` of `shape` held whole, row-major, by rank 0 of
/// a world of one.
ParamMap getWholeTensorMap(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);

class OpenReads;

/// Bytes [offset, offset + bytes) of the file at `path`: what a job reads.
struct FileBytes {
  std::string path;
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// Where the input of a process group is node-local (each process holds
/// some of its files, and sees the others as replicas whose large records
/// are holes until filled): collective, called once by every process with
/// the bytes it is about to read, which it brings from the processes that
/// hold them. Jobs on storage every process reads have none.
using InputSupply = std::function<llvm::Error(std::vector<FileBytes>)>;

class ProcessGroup;

/// Collective over `group`: once every process has named its reads (an
/// error on one is every process's), brings `reads` through `supply`.
llvm::Error supplyReads(const InputSupply &supply, ProcessGroup *group,
                        llvm::Expected<std::vector<FileBytes>> reads);

/// A checkpoint as read: tensors whose shards are bound to bytes.
class CheckpointSource {
public:
  virtual ~CheckpointSource();

  /// Where it was read from, for messages.
  virtual llvm::StringRef getPath() const = 0;
  /// Its tensors, trainable ones first, in the order the format keeps them.
  virtual llvm::ArrayRef<CheckpointTensor> getTensors() const = 0;
  /// The bytes of shard `rank` of `state` of tensor `index`: its elements
  /// in row-major order of the shard's shape, of the state's type; null
  /// where this process does not hold the rank (a process group's).
  virtual const char *getShard(size_t index, TensorState state,
                               int64_t rank) const = 0;
  /// The mapped file holding that shard; null where its bytes are in
  /// memory.
  virtual const llvm::MemoryBuffer *
  getShardBuffer(size_t index, TensorState state, int64_t rank) const {
    return nullptr;
  }
  /// Done reading the bytes [data, data + bytes) of that shard: their
  /// pages may leave memory.
  void releaseShard(size_t index, TensorState state, int64_t rank,
                    const char *data, size_t bytes) const;
  /// Calls `consume(chunk, offset)` on the bytes [from, from + bytes) of
  /// that shard in order, `chunkBytes` at a time, read from its file
  /// rather than through the mapping (readMappedBytes): what a pass over
  /// every byte of a checkpoint that reads each once wants.
  llvm::Error
  readShard(size_t index, TensorState state, int64_t rank, size_t from,
            size_t bytes, size_t chunkBytes,
            llvm::function_ref<void(llvm::StringRef, size_t)> consume) const;
  /// Names that are another tensor of the checkpoint (tied weights), as
  /// (alias, tensor), in the order the format keeps them.
  virtual std::vector<std::pair<std::string, std::string>> getAliases() const {
    return {};
  }

  /// The files its bytes were read from, every one (a check of their
  /// containers reads them all).
  virtual std::vector<std::string> getFiles() const { return {}; }
  /// Bytes the format keeps beside the tensors' (ZeRO's padding of a flat
  /// partition) that must be zero: where they are, for messages, and them.
  struct Padding {
    std::string file, what;
    /// The element of `what` the padding starts at, and its elements.
    int64_t firstElement = 0;
    DType type = DType::F32;
    const char *data = nullptr;
    int64_t elements = 0;
    /// Where `data` lies in `file`, in bytes (what checking it reads).
    int64_t offset = 0;
  };
  virtual std::vector<Padding> getPaddings() const { return {}; }
  /// The file holding shard `rank` of `state` of tensor `index`, for
  /// messages.
  virtual std::string getShardFile(size_t index, TensorState state,
                                   int64_t rank) const {
    return getPath().str();
  }
  /// What opening it read already and kept (CheckShare::keepReads asks
  /// DeepSpeed's reader to): `check` does not read those bytes again.
  /// Null where nothing was kept.
  virtual const OpenReads *getOpenReads() const { return nullptr; }
  /// Refuses a checkpoint some of whose tensors the reader knows of but
  /// could not bind (a layout it does not read yet), naming them; a job
  /// that writes every tensor calls it.
  virtual llvm::Error checkComplete() const { return llvm::Error::success(); }

  /// A run of `program` (planned from tensor `index`'s map) moving `state`:
  /// every shard this process holds as a source, at the state's scale
  /// power.
  ProgramRun getRun(size_t index, TensorState state,
                    const CopyProgram &program) const;
  /// Where the bytes of shard `rank` of `state` of tensor `index` lie in
  /// their file; none where they are in memory or not held here.
  std::optional<FileBytes> getShardBytes(size_t index, TensorState state,
                                         int64_t rank) const;
  /// Adds to `reads` where every rank's shard of `state` of tensor `index`
  /// lies (those getShardBytes knows): what moving the state reads, and
  /// checking its replicas and values.
  void addStateBytes(size_t index, TensorState state,
                     std::vector<FileBytes> &reads) const;
  /// Calls releaseShard for the source bytes a program has read.
  auto getReleaser(size_t index, TensorState state) const {
    return [this, index, state](int64_t rank, const char *data, size_t bytes) {
      releaseShard(index, state, rank, data, bytes);
    };
  }
};

} // namespace ucp

#endif // UCP_CHECKPOINT_CHECKPOINTMODEL_H

//===- ShardFiles.h - A map set's shard files as a checkpoint ---*- C++ -*-===//
//
// The files extract writes and reshard reads: one safetensors file per
// rank, each holding that rank's shards of the parameters a map set
// describes, keyed by parameter name. Read as a CheckpointSource: every
// tensor's map is its map, its state the weight. A process of a group
// opens only the files of the ranks it holds; the types of the others'
// shards are settled once the processes agree.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_SAFETENSORS_SHARDFILES_H
#define UCP_FORMATS_SAFETENSORS_SHARDFILES_H

#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Formats/Safetensors/Safetensors.h"

#include <functional>
#include <map>

namespace ucp {

/// A map set's shard files read as a checkpoint.
class ShardFilesCheckpoint final : public CheckpointSource {
public:
  struct Options {
    /// Where the maps come from ("the map", a map file), for messages.
    std::string mapOrigin = "the map";
    /// Accept tensors no map describes (they are not read).
    bool ignoreExtraTensors = false;
    /// Whether this process reads rank `rank`'s file; null: every rank.
    std::function<bool(int64_t)> holds;
  };

  /// Opens the files of the ranks this process holds (`files`, by rank) and
  /// checks them against `maps`: every shard held is in its rank's file,
  /// with its elements in its shape (or flat), of one type per parameter;
  /// unless ignoreExtraTensors, a file holds nothing else. A rank no shard
  /// needs is read when its file is there, so that a stray tensor is found.
  static llvm::Expected<std::unique_ptr<ShardFilesCheckpoint>>
  open(llvm::ArrayRef<ParamMap> maps,
       const std::map<int64_t, std::string> &files, Options options);

  /// The type of tensor `index` its files say; nothing where this process
  /// holds none of its shards.
  std::optional<DType> getReadType(size_t index) const { return read[index]; }
  /// Settles the type of tensor `index` (the one the processes agreed on).
  void setType(size_t index, DType type);
  /// Bytes of the shards this process holds.
  int64_t getBytesRead() const { return bytesRead; }

  llvm::StringRef getPath() const override { return options.mapOrigin; }
  llvm::ArrayRef<CheckpointTensor> getTensors() const override {
    return tensors;
  }
  /// The shard's bytes; null for a rank this process does not hold.
  const char *getShard(size_t index, TensorState state,
                       int64_t rank) const override;

private:
  ShardFilesCheckpoint() = default;
  bool holds(int64_t rank) const {
    return !options.holds || options.holds(rank);
  }
  llvm::Error openFiles(const std::map<int64_t, std::string> &files);
  llvm::Error checkShards(size_t index);
  llvm::Error checkNothingElse() const;

  Options options;
  std::vector<CheckpointTensor> tensors;
  std::vector<std::optional<DType>> read;
  std::map<int64_t, std::unique_ptr<SafetensorsReader>> readers;
  int64_t bytesRead = 0;
};

} // namespace ucp

#endif // UCP_FORMATS_SAFETENSORS_SHARDFILES_H

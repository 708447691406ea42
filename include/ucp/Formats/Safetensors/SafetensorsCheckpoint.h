//===- SafetensorsCheckpoint.h - Safetensors files as a checkpoint *- C++
//-*-===//
//
// A model saved as safetensors (Hugging Face's save_pretrained, export's
// output, any other writer) read as a CheckpointSource: every tensor held
// whole, its weight, memory-mapped. What a DeepSpeed checkpoint reads from
// its files, this reads from one file, or a folder: the files
// model.safetensors.index.json's weight_map names (each tensor in the file
// it names, and every tensor of those files named), or without an index
// every *.safetensors file of the folder (each tensor in one of them).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_SAFETENSORS_SAFETENSORSCHECKPOINT_H
#define UCP_FORMATS_SAFETENSORS_SAFETENSORSCHECKPOINT_H

#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Formats/Safetensors/Safetensors.h"

namespace ucp {

/// The name of Hugging Face's index of a sharded model.
inline constexpr llvm::StringLiteral kSafetensorsIndexName =
    "model.safetensors.index.json";

/// Safetensors files read as a checkpoint.
class SafetensorsCheckpoint final : public CheckpointSource {
public:
  /// Opens `path`: a safetensors file, or a folder of them as above. Errors
  /// name the file and the tensor.
  static llvm::Expected<std::unique_ptr<SafetensorsCheckpoint>>
  open(llvm::StringRef path);

  llvm::StringRef getPath() const override { return path; }
  llvm::ArrayRef<CheckpointTensor> getTensors() const override {
    return tensors;
  }
  const char *getShard(size_t index, TensorState state,
                       int64_t rank) const override;
  const llvm::MemoryBuffer *getShardBuffer(size_t index, TensorState state,
                                           int64_t rank) const override;
  std::vector<std::string> getFiles() const override;
  std::string getShardFile(size_t index, TensorState state,
                           int64_t rank) const override {
    return where[index].first->getPath().str();
  }

private:
  SafetensorsCheckpoint() = default;
  /// Adds every tensor of `file`, refusing one another file holds.
  llvm::Error addFile(std::unique_ptr<SafetensorsReader> file);
  /// Reads the index of the folder `path` and the files it names.
  llvm::Error openIndexed(llvm::StringRef index);

  std::string path;
  std::vector<std::unique_ptr<SafetensorsReader>> files;
  std::vector<CheckpointTensor> tensors;
  /// Per tensor: its file and its record there.
  std::vector<std::pair<const SafetensorsReader *, const TensorInfo *>> where;
};

} // namespace ucp

#endif // UCP_FORMATS_SAFETENSORS_SAFETENSORSCHECKPOINT_H

//===- OpenCheckpoint.h - The reader a path needs ---------------*- C++ -*-===//
//
// Every job that reads any checkpoint opens it here: the format is known
// from what the path holds, and the reader of that format makes the
// checkpoint model (ucp/Checkpoint/CheckpointModel.h).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_JOBS_OPENCHECKPOINT_H
#define UCP_JOBS_OPENCHECKPOINT_H

#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"

#include <memory>

namespace ucp {

/// The formats a checkpoint can be read from.
enum class CheckpointFormat {
  /// A DeepSpeed save_checkpoint folder, CKPT/TAG.
  DeepSpeed,
  /// A Universal Checkpoint folder (ds_to_universal's output).
  Universal,
  /// A safetensors file, or a folder of them.
  Safetensors,
};

/// The format of what `path` holds: a .safetensors file, or a folder with
/// a `zero` folder (Universal), with safetensors files or their index
/// (Safetensors), else DeepSpeed's.
CheckpointFormat detectCheckpointFormat(llvm::StringRef path);

/// The folder `path`'s pointer file (`latest`, else `latest_universal`)
/// names, when `path` is a parent of tags rather than a checkpoint itself
/// (setting `pointer` to the pointer file followed); else `path`.
std::string followCheckpointPointer(llvm::StringRef path, std::string &pointer);

/// Opens `path` with the reader of its format; a DeepSpeed checkpoint
/// makes `share`'s part of its checks (CheckShare).
llvm::Expected<std::unique_ptr<CheckpointSource>>
openCheckpoint(llvm::StringRef path,
               CheckShare share = {});

/// Under the node-local storage model, collective over `group` (which
/// `share` names this process's part of): opens the DeepSpeed or Universal
/// checkpoint `folder` (a NodeLocalFolder's local folder, whose large
/// records are holes until brought) without the comparisons of copies,
/// and brings through `supply` what opening it with them reads on this
/// process (DeepSpeedCheckpoint::getWeightCheckReads), so that
/// openCheckpoint(folder, share) then reads only bytes that are there.
/// A checkpoint any process cannot open fails every process.
llvm::Error supplyOpenReads(llvm::StringRef folder, CheckShare share,
                            ProcessGroup *group, const InputSupply &supply);

} // namespace ucp

#endif // UCP_JOBS_OPENCHECKPOINT_H

//===- Export.h - A checkpoint's model weights as safetensors ---*- C++ -*-===//
//
// What DeepSpeed's zero_to_fp32.py makes of a checkpoint, for any checkpoint
// the product reads (every ZeRO stage, TP and EP layout, a Universal
// folder, safetensors files): the consolidated model (the tensors held
// whole, module buffers and frozen parameters, then every trainable
// parameter whole, from its fp32 master where it has one) as Hugging
// Face-style safetensors files.
// One file `model.safetensors`, or, beyond the shard size,
// `model-0000i-of-0000N.safetensors` and `model.safetensors.index.json`
// (its total_size and each tensor's file). Tensors are made one at a
// time, their source pages released as read, so that memory holds about
// one tensor.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_JOBS_EXPORT_H
#define UCP_JOBS_EXPORT_H

#include "ucp/Support/Progress.h"
#include "ucp/Checkpoint/CheckpointModel.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <optional>

namespace ucp {

class ProcessGroup;

struct ExportOptions {
  /// The floating-point tensors' dtype: F32, BF16 or F16, rounded to
  /// nearest even. Integer buffers keep theirs.
  DType dtype = DType::F32;
  /// The most bytes of tensors per file (a larger tensor has a file of its
  /// own), as Hugging Face's save_pretrained cuts its shards.
  int64_t maxShardBytes = 5'000'000'000;
  /// Leave out the frozen parameters (requires_grad=False) and their
  /// aliases, as zero_to_fp32's --exclude_frozen_parameters does; buffers
  /// stay.
  bool excludeFrozen = false;
  /// Scan every master and moment read for NaN, Inf and negative second
  /// moments, and refuse the checkpoint at the first (ucp/Checkpoint/
  /// ValueCheck.h). Off, such values are moved as they are.
  bool checkValues = true;
  /// Wait until the files are on disk before returning.
  bool syncOutputs = true;
  /// Called about once a second with (tensors done, tensors, bytes): with
  /// a group, this process's tensors.
  ProgressFunction progress;
  /// The processes that share the export (ucp/Engine/GroupOutputs.h),
  /// each writing the files given to it; none: this process alone.
  ProcessGroup *group = nullptr;
  /// With a group whose input is node-local: brings the bytes this
  /// process's files read, once the files are divided.
  InputSupply supplyInput;
};

struct ExportStats {
  size_t tensors = 0, files = 0;
  int64_t bytesWritten = 0;
  double seconds = 0;
};

/// Parses a shard size as Hugging Face writes it: a number of bytes, or one
/// with a unit of KB, MB, GB (powers of 1000) or KiB, MiB, GiB (of 1024);
/// nothing for what is not a positive size that int64 holds.
std::optional<int64_t> parseShardSize(llvm::StringRef text);

/// Writes the model of `checkpoint` into the new folder `folder` (made
/// whole or not at all).
llvm::Expected<ExportStats> exportModel(const CheckpointSource &checkpoint,
                                        llvm::StringRef folder,
                                        const ExportOptions &options);

} // namespace ucp

#endif // UCP_JOBS_EXPORT_H

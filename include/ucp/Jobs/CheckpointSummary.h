//===- CheckpointSummary.h - What a checkpoint folder holds ------*- C++ -*-===//
//
// What a user needs to know before converting a checkpoint, read from its
// files without moving any tensor: its format, the DeepSpeed version and
// step, the grid, dtypes, parameter groups, every tensor with its shape and
// how it is split, sizes on disk, and which conversions apply. `affine-run
// inspect` prints it, as text or JSON.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_JOBS_CHECKPOINTSUMMARY_H
#define UCP_JOBS_CHECKPOINTSUMMARY_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace ucp {

/// One tensor of a checkpoint.
struct TensorSummary {
  std::string name;
  Extents shape;
  /// "trainable", "frozen" or "buffer".
  std::string role;
  /// The states it holds with their dtypes, as "fp32 f32".
  std::vector<std::pair<std::string, std::string>> states;
  /// How it is split, in one line ("rows / TP 2, ZeRO fragments over DP
  /// 2", "whole").
  std::string layout;
};

/// What a checkpoint folder (or safetensors file) holds.
struct CheckpointSummary {
  /// The folder read, and the pointer file followed to it, if one was.
  std::string path, pointer;
  /// "DeepSpeed ZeRO-2", "DeepSpeed BF16_Optimizer (ZeRO-1)", "Universal",
  /// "safetensors"; with ", pipeline" or ", AutoEP" where they apply.
  std::string format;
  std::string deepSpeedVersion;
  std::optional<int64_t> step;
  int64_t pp = 1, tp = 1, dp = 1, ep = 0;
  /// The trainable parameters of each optimizer parameter group.
  std::vector<size_t> groupSizes;
  std::vector<TensorSummary> tensors;
  /// The files under the folder, and their bytes.
  size_t files = 0;
  int64_t bytesOnDisk = 0;
  /// The commands that apply, and those refused with the reason.
  std::vector<std::string> applies, refused;
};

/// Reads the summary of `path`: a DeepSpeed tag folder, its parent with
/// `latest` (or `latest_universal`), a Universal folder, a safetensors file
/// or a folder of them.
llvm::Expected<CheckpointSummary> summarizeCheckpoint(llvm::StringRef path);

/// Prints `summary` for a reader.
void printCheckpointSummary(const CheckpointSummary &summary,
                            llvm::raw_ostream &os);

/// `summary` as JSON.
llvm::json::Value toJson(const CheckpointSummary &summary);

} // namespace ucp

#endif // UCP_JOBS_CHECKPOINTSUMMARY_H

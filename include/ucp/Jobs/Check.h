//===- Check.h - A checkpoint proven sound before training ------*- C++ -*-===//
//
// `affine-run check`: what can be proven of any checkpoint the product
// reads, each at the cost of one read of the bytes involved. The reader
// checks what its format promises as it opens (one run, one step, one grid,
// every file where its name says, module weights equal to their masters
// rounded, a tied parameter's copies equal); then every tensor's map is
// verified (P1 coverage, P5 homogeneity, shard tiling), every block that
// several ranks hold is compared across them (P2), every state's values
// are scanned (masters and moments finite, exp_avg_sq never negative;
// weights finite, reported but not fatal unless asked), the padding the
// format keeps zero is (ZeRO-1/2's partitions), and every record of every
// torch.save file is checked against the CRC-32 its zip directory
// records. Each finding names the file, the tensor and state,
// the rank, the first offending element of F and how many are affected.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_JOBS_CHECK_H
#define UCP_JOBS_CHECK_H

#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Map/ParamMap.h"
#include "ucp/Support/Progress.h"

#include "llvm/Support/JSON.h"

#include <functional>
#include <string>
#include <vector>

namespace ucp {

/// One thing a check found wrong.
struct CheckFinding {
  /// What was checked: "reader" (the format's own checks on open), "map"
  /// (P1, P5, tiling), "replicas" (P2), "values", "padding" (the format's
  /// zeros), "container" (CRC-32).
  std::string kind;
  /// The whole finding, one line, for a reader.
  std::string message;
  /// Its parts, where they apply: the file, the tensor and state, the
  /// rank (-1: none), the first offending element of F and how many
  /// elements are affected.
  std::string file, tensor, state;
  int64_t rank = -1;
  Extents element;
  int64_t count = 0;
  /// Whether it makes the checkpoint unsound (non-finite weights do not,
  /// unless asked).
  bool fatal = true;
};

class ProcessGroup;

struct CheckOptions {
  /// Whether NaN or Inf in a weight (not a master or moment) is fatal.
  bool nonFiniteWeightsFatal = false;
  /// Called with (files and tensors done, in all, bytes read): with a
  /// group, this process's.
  ProgressFunction progress;
  /// The processes that share the check (every one reads the checkpoint):
  /// each checks the tensors and files given to it by bytes
  /// (ucp/Engine/GroupOutputs.h), and process 0's report holds every
  /// finding, in the order one process finds them, and the totals; every
  /// process's report says whether the checkpoint is sound.
  ProcessGroup *group = nullptr;
  /// Where the group's input is node-local (each process holds some
  /// files): brings what this process reads of the files it lacks
  /// (supplyOpenReads on open, then its tensors' shards and paddings).
  InputSupply supplyInput;
  /// With supplyInput: the process holding each input file (by its path),
  /// which checks its records' CRC-32s, reading it where it lies.
  std::function<int(llvm::StringRef file)> getFileHolder;
  /// The folder reports name in place of the one read, where they differ
  /// (a node-local input's local folder, named as the user gave it).
  std::string shownPath;
};

/// What a check read and found.
struct CheckReport {
  /// The folder or file read, and the pointer file followed to it.
  std::string path, pointer;
  /// The tensors, their state arrays (tensor x state), the ranks of the
  /// largest map, the files and their records.
  size_t tensors = 0, stateArrays = 0, files = 0, records = 0, paddings = 0;
  int64_t ranks = 0;
  /// The bytes scanned: every shard of every state, and every record.
  int64_t bytesRead = 0;
  std::vector<CheckFinding> findings;
  /// What was proven, one line.
  std::string summary;

  /// Whether no finding is fatal.
  bool isSound() const;
  /// Names the folder `shown` wherever the report names `read` (its path,
  /// its findings' messages and files): a node-local input's local folder
  /// named as the user gave it.
  void showFolderAs(llvm::StringRef read, llvm::StringRef shown);
};

/// Checks the checkpoint at `path` (anything openCheckpoint reads, or a
/// parent folder with `latest`). A checkpoint that cannot be read at all
/// is a finding of kind "reader", not an error; with a group, so is a
/// group that cannot combine its reports (kind "group").
CheckReport checkCheckpoint(llvm::StringRef path, const CheckOptions &options);

/// `report` as JSON.
llvm::json::Value toJson(const CheckReport &report);
/// `finding` as JSON: its parts where they apply.
llvm::json::Object toJson(const CheckFinding &finding);
/// The finding `value` holds, as toJson wrote it (a part it leaves out
/// keeps its default: no file, rank -1, fatal).
CheckFinding findingFromJson(const llvm::json::Object &value);

} // namespace ucp

#endif // UCP_JOBS_CHECK_H

//===- DeepSpeedReader.h - Steps of reading a DeepSpeed checkpoint -*- C++
//-*-===//
//
// Internal to the IO library: the folder's files, the model and optimizer
// states as plain records, and ZeRO's placement of fragments, each step a
// function of its own so that each can be tested and read alone.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_IO_DEEPSPEEDREADER_H
#define UCP_LIB_IO_DEEPSPEEDREADER_H

#include "ucp/IO/DeepSpeedCheckpoint.h"
#include "ucp/IO/PickleCursor.h"

#include <map>
#include <set>

namespace ucp {

/// The torch.save files of a checkpoint folder, by grid position.
struct CheckpointFiles {
  bool zero3 = false;
  int64_t tp = 0, dp = 0;
  /// Per TP rank (ZeRO-1/2) or per grid rank `dp * tp + t` (ZeRO-3).
  std::vector<std::string> modelFiles;
  /// Per grid rank.
  std::vector<std::string> optimizerFiles;
};

/// The .pt files of a checkpoint folder, before the grid is known.
struct FolderScan {
  std::string folder;
  bool zero3 = false;
  /// "bf16_" or "": the optimizer files' prefix.
  std::string prefix;
  std::set<std::string> names;
};

/// Lists `folder`'s .pt files, all named as save_checkpoint names them, of
/// one stage and one prefix.
llvm::Expected<FolderScan> scanCheckpointFolder(llvm::StringRef folder);

/// The model-state file of TP and DP rank 0, which records the grid.
std::string getFirstModelFile(const FolderScan &scan);

/// Selects the files of a grid of `tp` x `dp` ranks from `scan`, refusing a
/// missing file or one outside the grid.
llvm::Expected<CheckpointFiles> selectGridFiles(const FolderScan &scan,
                                                int64_t tp, int64_t dp);

/// A parameter as a group's `param_shapes` lists it.
struct GroupParam {
  std::string name;
  Extents shape;
  int64_t elements = 0;
};

/// What one TP rank's model-state file says.
struct ModelStates {
  /// Per optimizer parameter group, in order.
  std::vector<std::vector<GroupParam>> groups;
  /// universal_checkpoint_info as JSON, if the file has it.
  std::optional<llvm::json::Value> universalInfo;
  int64_t dpWorldSize = 0, mpWorldSize = 0;
  /// What must agree across the files of one run.
  std::string version;
  int64_t globalSteps = 0;
};

/// Reads the model-state file `file`.
llvm::Expected<ModelStates> readModelStates(const TorchFile &file);

/// One parameter group as one rank's optimizer file records it.
struct RankGroup {
  /// The flat partitions of fp32 weights, exp_avg, exp_avg_sq.
  std::array<PickleRef, 3> partitions{};
  std::array<int64_t, 3> lengths{};
  std::optional<PickleRef> step;
  /// ZeRO-1/2: param_slice_mappings, name -> (numel, start), in order.
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> slices;
};

/// What one rank's optimizer file says.
struct OptimizerStates {
  int stage = 1;
  int64_t partitionCount = 0;
  std::vector<RankGroup> groups;
  std::string version;
};

/// Reads the optimizer-state file `file` of a ZeRO-1/2 (`zero3` false) or
/// ZeRO-3 checkpoint.
llvm::Expected<OptimizerStates> readOptimizerStates(const TorchFile &file,
                                                    bool zero3);

/// Places the fragments of one parameter group of one TP rank: for each
/// parameter of `params`, its slice on each DP rank of `ranks` (that
/// group's records in the DP ranks' optimizer files, named by `files`).
/// ZeRO-1/2 (`zero3` false): the group is flattened in order and padded,
/// split into equal partitions, and each rank's param_slice_mappings must
/// be exactly the parameters' intersections with its partition. ZeRO-3:
/// each parameter takes `ceil(elements / dp)` slots on every rank.
llvm::Expected<std::vector<std::vector<FragmentSlice>>>
placeFragments(llvm::ArrayRef<GroupParam> params,
               llvm::ArrayRef<const RankGroup *> ranks,
               llvm::ArrayRef<std::string> files, bool zero3);

/// Reads a checkpoint into a DeepSpeedCheckpoint, one step per method.
class DeepSpeedReader {
public:
  explicit DeepSpeedReader(DeepSpeedCheckpoint &checkpoint)
      : checkpoint(checkpoint) {}
  llvm::Error run(llvm::StringRef folder);
  /// Reads a Universal checkpoint folder instead
  /// (UniversalCheckpointReader.cpp).
  llvm::Error runUniversal(llvm::StringRef folder);

private:
  llvm::Error readFiles();
  llvm::Error checkOneRun() const;
  llvm::Error readTensorParallelLayout();
  llvm::Error buildParams();
  llvm::Expected<ParamMap> buildTpMap(llvm::StringRef name,
                                      llvm::ArrayRef<Extents> shapes) const;
  llvm::Error findUniversalFiles(llvm::StringRef folder);
  llvm::Error buildUniversalParams();
  llvm::Error readUniversalStates(const DeepSpeedParam &param);
  llvm::Error buildUniversalTemplates();
  /// The model states of TP rank `t` (DP rank 0's, for ZeRO-3).
  const ModelStates &getModel(int64_t t) const { return models[t]; }

  DeepSpeedCheckpoint &checkpoint;
  CheckpointFiles files;
  std::vector<ModelStates> models;
  std::vector<OptimizerStates> optimizers;
  std::map<std::string, ParamMap> affineMaps;
  std::optional<LegacyCategories> &categories = checkpoint.categories;
};

} // namespace ucp

#endif // UCP_LIB_IO_DEEPSPEEDREADER_H

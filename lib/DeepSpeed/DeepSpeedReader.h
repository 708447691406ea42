//===- DeepSpeedReader.h - Steps of reading a DeepSpeed checkpoint -*- C++
//-*-===//
//
// Internal to the IO library: the folder's files, the model and optimizer
// states as plain records, and ZeRO's placement of fragments, each step a
// function of its own so that each can be tested and read alone.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DEEPSPEED_DEEPSPEEDREADER_H
#define UCP_LIB_DEEPSPEED_DEEPSPEEDREADER_H

#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"
#include "ucp/Formats/Torch/PickleCursor.h"

#include <map>
#include <set>

namespace ucp {

/// The process of `processes` that makes the comparisons of copies of
/// each of `params` (CheckShare), by the bytes they read.
std::vector<int> getCheckOwners(llvm::ArrayRef<DeepSpeedParam> params,
                                int processes);

/// Whether process `share.process` compares the elements of ZeRO stage
/// 0's two optimizer records of model-parallel rank `rank`
/// (checkOptimizerCopies).
bool comparesOptimizerCopy(const CheckShare &share, size_t rank);

/// `file` where `data` lies in it; null where it does not (bytes copied
/// into memory on open: makeRowMajor), as getShardBuffer promises.
inline const llvm::MemoryBuffer *
getBufferHolding(const llvm::MemoryBuffer &file, const char *data) {
  return data >= file.getBufferStart() && data < file.getBufferEnd() ? &file
                                                                     : nullptr;
}

/// Whether `param` is held by several pipeline stages (a tied module's),
/// at TP degree `tp`.
inline bool isTiedAcrossStages(const DeepSpeedParam &param, int64_t tp) {
  std::set<int64_t> stages;
  for (const Shard &shard : param.tpMap.shards)
    stages.insert(shard.rank / tp);
  return !param.expertLayer && stages.size() > 1;
}

/// A pipeline run's layer files: layer -> TP rank -> path.
using LayerFiles = std::map<int64_t, std::map<int64_t, std::string>>;

/// The torch.save files of a checkpoint folder, by grid position. The grid
/// is DP x MP ranks, grid rank `d * mp + m`; the model-parallel rank m is
/// `stage * tp + t` (a run without pipeline has one stage).
struct CheckpointFiles {
  bool zero3 = false;
  int64_t pp = 1, tp = 0, mp = 0, dp = 0;
  /// Per model-parallel rank (ZeRO-1/2) or per grid rank (ZeRO-3).
  std::vector<std::string> modelFiles;
  /// Per grid rank.
  std::vector<std::string> optimizerFiles;
  /// AutoEP's per-expert files: (moe layer, global expert) -> the files
  /// naming it (one per TP rank).
  std::map<std::pair<int64_t, int64_t>, std::vector<std::string>> expertFiles;
  /// A pipeline run's layer files.
  LayerFiles layerFiles;
};

/// "2 DP x 2 PP x 1 TP ranks" (PP only when there is a pipeline).
std::string describeGrid(int64_t dp, int64_t pp, int64_t tp);

/// The .pt files of a checkpoint folder, before the grid is known.
struct FolderScan {
  std::string folder;
  bool zero3 = false;
  /// "bf16_" or "": the optimizer files' prefix.
  std::string prefix;
  std::set<std::string> names;
  /// AutoEP's per-expert files, as in CheckpointFiles.
  std::map<std::pair<int64_t, int64_t>, std::vector<std::string>> expertFiles;
  /// Pipeline layer files, by layer and TP rank (-1 where the name gives
  /// none).
  LayerFiles layerFiles;
};

/// Lists `folder`'s .pt files, all named as save_checkpoint names them, of
/// one stage and one prefix.
llvm::Expected<FolderScan> scanCheckpointFolder(llvm::StringRef folder);

struct ModelStates;

/// The pipeline stages and TP ranks the model-state file `first` records
/// in `grid` (checkpoint_parallel_dimensions, or one stage), checked
/// against its mp_world_size.
llvm::Expected<std::pair<int64_t, int64_t>>
readPipelineDegrees(const TorchFile &first, const ModelStates &grid);

/// The pipeline stages and TP ranks of a run whose first model-state file
/// `first` says `grid`: checkpoint_parallel_dimensions, checked against
/// mp_world_size and the layer files of `scan` (PipelineLayers.cpp).
llvm::Expected<std::pair<int64_t, int64_t>>
getPipelineGrid(const FolderScan &scan, const TorchFile &first,
                const ModelStates &grid);

/// The model-state file of TP and DP rank 0, which records the grid.
std::string getFirstModelFile(const FolderScan &scan);

/// Selects the files of a grid of `dp` x `pp` x `tp` ranks from `scan`,
/// refusing a missing file or one outside the grid.
llvm::Expected<CheckpointFiles> selectGridFiles(const FolderScan &scan,
                                                int64_t pp, int64_t tp,
                                                int64_t dp);

/// A parameter as a group's `param_shapes` lists it.
struct GroupParam {
  std::string name;
  Extents shape;
  int64_t elements = 0;
};

/// One `ds_autoep_layers` entry: the layer and what it says of the rank
/// that wrote the file.
struct AutoEpRecord {
  AutoEpLayer layer;
  /// "per_expert_files" (ZeRO-1/2) or "zero3_partitioned"; the legacy
  /// `autoep_layers` may omit it and the rank fields.
  std::optional<std::string> format;
  std::optional<int64_t> epRank, edpRank, edpWorldSize;
};

/// The AutoEP metadata of a model-state file.
struct AutoEpStates {
  std::vector<AutoEpRecord> layers;
  /// Read from the legacy key `autoep_layers`.
  bool legacyKey = false;
  /// `num_experts`, one per layer, if recorded.
  std::optional<Extents> numExperts;
};

/// What one TP rank's model-state file says.
struct ModelStates {
  /// Per optimizer parameter group, in order.
  std::vector<std::vector<GroupParam>> groups;
  /// Whether `param_shapes` gave the groups (a pipeline run with
  /// BF16_Optimizer saves None).
  bool shapesRecorded = true;
  /// universal_checkpoint_info as JSON, if the file has it.
  std::optional<llvm::json::Value> universalInfo;
  /// `ds_autoep_layers` (or `autoep_layers`), if the file has it.
  std::optional<AutoEpStates> autoEp;
  int64_t dpWorldSize = 0, mpWorldSize = 0;
  /// checkpoint_parallel_dimensions, if recorded.
  std::optional<std::pair<int64_t, int64_t>> ppTpDegrees;
  /// What must agree across the files of one run.
  std::string version;
  int64_t globalSteps = 0;
};

/// Reads the AutoEP metadata of a model-state file's root: `ds_autoep_layers`
/// or the legacy `autoep_layers`, and `num_experts`; nothing if it has none.
llvm::Expected<std::optional<AutoEpStates>>
readAutoEpStates(const PickleCursor &root);

/// Reads the model-state file `file`.
llvm::Expected<ModelStates> readModelStates(const TorchFile &file);

/// One parameter group as one rank's optimizer file records it.
struct RankGroup {
  /// The flat partitions of fp32 weights, exp_avg, exp_avg_sq.
  std::array<PickleRef, 3> partitions{};
  std::array<int64_t, 3> lengths{};
  /// Whether the rank holds the group's Adam moments (an optimizer saved
  /// before its first step holds none).
  bool moments = false;
  std::optional<PickleRef> step;
  /// ZeRO-1/2: param_slice_mappings, name -> (numel, start), in order.
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> slices;
};

/// What one rank's optimizer file says.
struct TensorStates {
  /// Whether the file records its zero_stage (BF16_Optimizer's does not).
  bool recordsStage = false;
  int stage = 1;
  /// The dense DP degree: ZeRO-3's int, ZeRO-1/2's first group's.
  int64_t partitionCount = 0;
  /// Per group, the ranks it is partitioned over: ZeRO-1/2's list, ZeRO-3's
  /// `ds_zero_partition_groups` (AutoEP), else partitionCount for each.
  Extents groupPartitionCounts;
  /// ZeRO-3 with `ds_zero_partition_groups`: per group, the grid ranks of
  /// its partition group and this rank's place there.
  std::vector<Extents> groupPartitionRanks;
  Extents groupPartitionRank;
  std::vector<RankGroup> groups;
  std::string version;
  /// The torch optimizer's param_groups: per group, each setting (lr,
  /// betas, ...) as text, but `params` (each stage numbers its own): the
  /// same in every file of a run.
  std::vector<std::vector<std::pair<std::string, std::string>>> paramGroups;
};

/// Reads the optimizer-state file `file` of a ZeRO-1/2 (`zero3` false) or
/// ZeRO-3 checkpoint: the optimizer's dict under `key` (the model states
/// of ZeRO stage 0 keep one under "optimizer").
llvm::Expected<TensorStates>
readTensorStates(const TorchFile &file, bool zero3,
                 llvm::StringRef key = "optimizer_state_dict");

/// `tensor` (of `file`) if its view is row-major; else its elements copied
/// in row-major order into a new string of `copies`, which holds them for
/// as long as the checkpoint lives (a deque: the strings never move), the
/// span of `file` read added to `reads`.
TensorData makeRowMajor(const TensorData &tensor, const TorchFile &file,
                        std::deque<std::string> &copies,
                        std::vector<FileBytes> &reads);

/// The value of the step `ref` of `file`: a number, or a tensor of one
/// element.
llvm::Expected<double> readStepValue(const TorchFile &file, PickleRef ref);

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

/// Writes `document` with the storages `storages` (key, bytes), the rest
/// copied from `source` where given, to a private temporary file, and
/// returns its bytes: a template the writers fill, held in memory.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
writeTemplateFile(const PickleDocument &document,
                  llvm::ArrayRef<std::pair<std::string, std::string>> storages,
                  const TorchFile *source);

/// One tensor of a pipeline layer file's state_dict.
struct LayerEntry {
  /// The file's index in DeepSpeedCheckpoint::getLayerFiles(), its layer.
  size_t file = 0;
  int64_t layer = 0;
  std::string key;
  PickleRef tensor = 0;
  Extents shape;
  /// Whether it is the weight of a parameter of its layer, or of a tied
  /// parameter.
  bool layerWeight = false, tiedWeight = false;
};

/// Reads a checkpoint into a DeepSpeedCheckpoint, one step per method.
class DeepSpeedReader {
public:
  explicit DeepSpeedReader(DeepSpeedCheckpoint &checkpoint,
                           CheckShare share = {})
      : checkpoint(checkpoint), share(share) {}
  llvm::Error run(llvm::StringRef folder);
  /// Reads a Universal checkpoint folder instead
  /// (UniversalCheckpointReader.cpp).
  llvm::Error runUniversal(llvm::StringRef folder);
  /// Makes a fresh checkpoint of `weights` instead (FreshCheckpoint.cpp).
  llvm::Error runFresh(const CheckpointSource &weights,
                       const FreshCheckpointOptions &options);

private:
  llvm::Error readFiles();
  llvm::Error buildFreshTemplates(const FreshCheckpointOptions &options,
                                  llvm::ArrayRef<std::vector<size_t>> groups);
  /// The checkpoint's tensors as a CheckpointSource (ModelTensors.cpp).
  llvm::Error buildTensors();
  llvm::Error addSavedTensors();
  llvm::Error addSavedTensor(llvm::StringRef name, const PickleCursor &value,
                             std::optional<Extents> shape,
                             CheckpointTensor::Role role);
  // Frozen parameters (FrozenTensors.cpp).
  /// Where a stage keeps a frozen parameter: whole in the module only
  /// (ZeRO-1), whole in the module and its records (ZeRO-2), in ZeRO-3's
  /// slots.
  enum class FrozenForm { ModuleOnly, Whole, Zero3 };
  /// The tensors of `module` (under model states `root`) that no
  /// parameter group, buffer_names or shared_params names, in module
  /// order: ZeRO-1's frozen parameters, which it records nowhere else.
  std::vector<std::string>
  findModuleOnlyTensors(const PickleCursor &root,
                        const PickleCursor &module) const;
  /// Adds the frozen parameters of the model states `root` (`module` its
  /// module).
  llvm::Error addFrozenParams(const PickleCursor &root,
                              const PickleCursor &module);
  /// Adds frozen parameter `name`, kept in `form` by every model-states
  /// file.
  llvm::Error addFrozenParam(llvm::StringRef name, FrozenForm form);
  /// The shape of frozen parameter `name`'s TP shard as `file` records it.
  llvm::Expected<Extents> getFrozenShardShape(const TorchFile &file,
                                              llvm::StringRef name,
                                              FrozenForm form) const;
  /// The bytes of frozen parameter `name` in `file`: its TP shard of
  /// `shape` whole, or its `slots` of that (ZeRO-3), of the first file's
  /// `type` (set by the first).
  llvm::Expected<DeepSpeedCheckpoint::SavedShard>
  getFrozenShard(const TorchFile &file, llvm::StringRef name, FrozenForm form,
                 const Extents &shape, int64_t slots,
                 std::optional<DType> &type);
  llvm::Error addAliases();
  llvm::Error checkOneRun() const;
  /// Every optimizer file records the same Adam step for each parameter
  /// group, or none does: DeepSpeed steps every rank together.
  llvm::Error checkSteps() const;
  /// For each parameter group index, the first optimizer file holding it
  /// (pipeline stages may hold different numbers of groups).
  std::vector<size_t> getFirstFileOfGroups() const;
  /// ZeRO-1/2: every module weight has the shape param_shapes gives it
  /// (MasterWeightCheck.cpp).
  llvm::Error checkParamShapes() const;
  /// ZeRO-1/2: every module weight is its fp32 master, joined from its
  /// model-parallel rank's fragments, written to the weight's type
  /// (MasterWeightCheck.cpp).
  llvm::Error checkWeightsAgainstMasters() const;
  /// Checks grid rank `rank`'s partition counts against its groups'.
  llvm::Error checkPartitionCounts(size_t rank) const;
  /// AutoEP (AutoEpLayout.cpp): the layers, which groups hold experts, and
  /// the per-expert files, all checked against each other.
  llvm::Error readExpertParallelLayout();
  llvm::Error checkExpertFiles();
  llvm::Error findExpertParams();
  /// The DP degree group `g` is partitioned over: EDP for experts.
  int64_t getGroupDpDegree(size_t g) const;
  /// The model-parallel degree of group `g`: TP, or EP for experts.
  int64_t getGroupOuterDegree(size_t g) const;
  llvm::Error readTensorParallelLayout();
  /// Every parameter over the grid, stage by stage (ParamGrid.cpp).
  llvm::Error buildParams();
  /// Places the fragments of parameter group `g` of pipeline stage `stage`
  /// and adds its parameters, or the stage's copy of one another stage
  /// holds too; `byName` indexes checkpoint.params.
  llvm::Error placeGroup(int64_t stage, size_t g,
                         std::map<std::string, size_t> &byName);
  /// The map of `param` over the model-parallel ranks: its TP map on each
  /// of `stages`, or its expert map.
  llvm::Expected<ParamMap>
  buildModelParallelMap(const DeepSpeedParam &param,
                        llvm::ArrayRef<int64_t> stages) const;
  /// A pipeline run's layer files (PipelineLayers.cpp): opens them and
  /// lists their tensors.
  llvm::Error openLayerFiles();
  /// The tensors of the layer files that may be the weight of parameter
  /// `name` (of `elements` elements, if known): `<layer>.<key>`'s, or for
  /// a tied parameter every unclaimed one its name ends with.
  std::vector<LayerEntry *> findLayerEntries(llvm::StringRef name,
                                             std::optional<int64_t> elements);
  /// Where param_shapes is None (BF16_Optimizer in a pipeline), the
  /// groups from the optimizer files' param_slice_mappings, the shapes
  /// from the layer files.
  llvm::Error deriveParamShapes();
  /// Finds every parameter's module weights in the layer files.
  llvm::Error findLayerWeights();
  /// The copies of a parameter several stages hold (a tied embedding) are
  /// equal in every state: P2 (PipelineLayers.cpp).
  llvm::Error checkTiedCopies() const;
  /// Optimizer file `r`'s param_groups settings against the first file's.
  llvm::Error checkParamGroups(size_t r) const;
  /// ZeRO stage 0's optimizer in the model states against DP rank 0's
  /// optimizer file (OptimizerCopyCheck.cpp).
  llvm::Error checkOptimizerCopies() const;
  llvm::Expected<ParamMap> buildTpMap(llvm::StringRef name,
                                      llvm::ArrayRef<Extents> shapes) const;
  /// An expert's map over the EP ranks, from its EP-local shape.
  llvm::Expected<ParamMap> buildExpertMap(llvm::StringRef name, size_t layer,
                                          const Extents &localShape) const;
  llvm::Error findUniversalFiles(llvm::StringRef folder);
  /// Lists a Universal folder's parameters from its model states, each
  /// with its stages and shapes (UniversalCheckpointReader.cpp).
  llvm::Error listUniversalParams();
  llvm::Error buildUniversalParams();
  llvm::Error readUniversalStates(const DeepSpeedParam &param);
  llvm::Error buildUniversalTemplates();
  /// The model states of TP rank `t` (DP rank 0's, for ZeRO-3).
  const ModelStates &getModel(int64_t t) const { return models[t]; }

  DeepSpeedCheckpoint &checkpoint;
  /// The part of the weights-against-masters check this process makes.
  CheckShare share;
  CheckpointFiles files;
  std::vector<ModelStates> models;
  std::vector<TensorStates> optimizers;
  /// Per group: the AutoEP layer of each of its parameters, if experts.
  std::vector<std::vector<std::optional<size_t>>> expertLayers;
  std::set<size_t> expertGroups;
  /// Per parameter: the pipeline stages holding it, ascending.
  std::vector<std::vector<int64_t>> paramStages;
  /// A pipeline run's layer files: their tensors, and each layer's file.
  std::vector<LayerEntry> layerEntries;
  std::map<int64_t, size_t> fileOfLayer;
  std::optional<LegacyCategories> &categories = checkpoint.categories;
};

} // namespace ucp

#endif // UCP_LIB_DEEPSPEED_DEEPSPEEDREADER_H

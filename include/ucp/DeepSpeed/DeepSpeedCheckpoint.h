//===- DeepSpeedCheckpoint.h - A DeepSpeed ZeRO checkpoint, read -*- C++
//-*-===//
//
// A folder of torch.save files (`CKPT/TAG`) as DeepSpeed's save_checkpoint
// writes it for ZeRO stages 1 to 3, with or without tensor parallelism,
// read without DeepSpeed or torch. Two things come out of it, kept apart:
//
//  * the geometry: for every trainable parameter, its map over the (DP x
//    MP) grid of the run (grid rank `dp * mp + m`, the model-parallel rank
//    m being `stage * tp_degree + tp`; one stage without a pipeline), in
//    which each rank's shard is that rank's fragment of the parameter: the
//    parameter's TP map on each pipeline stage holding it (from
//    universal_checkpoint_info, or one TP rank) nested with the DP
//    fragments of each TP shard (nestShardMaps). A parameter two stages
//    hold (a tied embedding) is one parameter whose copies are replicas.
//    ZeRO-1/2 fragments are
//    the `fragment_address` slices of each rank's flat group partition,
//    checked against the group's flattening; ZeRO-3 fragments are each
//    parameter's own `ceil(numel / dp)` slot;
//  * the I/O binding: where a rank's fragment lies in its optimizer file
//    (group, offset and length in the flat partitions of fp32 weights and
//    Adam moments), so that data moves without consulting the names again.
//
// Everything is validated at open: the grid of files complete and of one
// run (versions, steps, shapes and world sizes agree), every fragment where
// the flattening puts it, every partition long enough. Errors name the file
// and the parameter.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DEEPSPEED_DEEPSPEEDCHECKPOINT_H
#define UCP_DEEPSPEED_DEEPSPEEDCHECKPOINT_H

#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Checkpoint/OpenReads.h"
#include "ucp/Formats/Torch/TorchFile.h"
#include "ucp/Layout/LegacyMetadata.h"
#include "ucp/Map/ParamMap.h"

#include "llvm/Support/JSON.h"

#include <array>
#include <deque>
#include <map>
#include <optional>

namespace ucp {

/// Where a grid rank's fragment of a parameter lies: `count` elements from
/// `offset` of the flat partition of the parameter's group in the rank's
/// optimizer file.
struct FragmentSlice {
  int64_t offset = 0;
  int64_t count = 0;
};

/// One AutoEP layer: its routed experts `<expertKeyPrefix>.<w>` are each
/// one parameter `[numExperts, ...]`, EP rank e holding experts
/// `[e * localExperts, (e + 1) * localExperts)`.
struct AutoEpLayer {
  int64_t moeLayerId = 0;
  std::string modulePath, expertKeyPrefix;
  int64_t numExperts = 0, localExperts = 0, epSize = 0;
};

/// The map of expert parameter `name` of `layer` over its EP ranks, each
/// holding its local experts (`localShape`, `[localExperts, ...]`).
llvm::Expected<ParamMap>
buildAutoEpExpertMap(llvm::StringRef name, const AutoEpLayer &layer,
                     llvm::ArrayRef<int64_t> localShape);

/// A trainable parameter of the checkpoint.
struct DeepSpeedParam {
  std::string name;
  /// The optimizer parameter group holding it (on every stage holding it).
  size_t group = 0;
  /// An AutoEP routed expert: its layer's index in getAutoEpLayers().
  std::optional<size_t> expertLayer;
  /// The shape of its shard on each model-parallel rank (`param_shapes`):
  /// the TP ranks of every stage, or for an expert the EP ranks; empty on
  /// the ranks of a stage that does not hold it (see holdsShard).
  std::vector<Extents> tpShapes;
  /// Whether model-parallel rank `rank` holds a shard of it (its stage
  /// holds it).
  bool holdsShard(int64_t rank) const {
    return llvm::any_of(tpMap.shards,
                        [&](const Shard &shard) { return shard.rank == rank; });
  }
  /// Its map over the model-parallel ranks alone: TP rank t of stage s
  /// (rank `s * tp_degree + t`) holds its TP shard; for an expert, EP rank
  /// e its local experts.
  ParamMap tpMap;
  /// Its map over the grid: rank `dp * mp + m` holds its fragment (tpMap
  /// with each model-parallel shard cut by DP, nestShardMaps). An
  /// expert's world is the same, numbered `edp * ep_size + ep`: each EP
  /// rank's experts cut by its expert-data-parallel ranks.
  ParamMap map;
  /// Per grid rank.
  std::vector<FragmentSlice> slices;
};

/// Refuses a parameter name that is not one folder name: in a Universal
/// checkpoint it names `zero/<name>/`, and `..` or a slash would lead
/// outside the folder.
llvm::Error checkUniversalFolderName(llvm::StringRef name);

/// An optimizer parameter group of a checkpoint made from weights alone.
struct FreshParamGroup {
  /// Its parameters, in the order of the model's parameters() (the order
  /// ZeRO flattens them in).
  std::vector<std::string> names;
  /// Its own hyper-parameters, over the config's (as a torch param group
  /// gives them: "weight_decay": 0.0).
  llvm::json::Object hyper;
};

/// How a DeepSpeed checkpoint is made from a model's weights alone.
struct FreshCheckpointOptions {
  /// The optimizer's parameter groups. Empty: one group, allowed for a
  /// model of one tensor only, since no other order is known.
  std::vector<FreshParamGroup> groups;
  /// The type of the module's weights: BF16, F16 or F32.
  DType modelType = DType::BF16;
  /// The run's ds_config, as JSON. The optimizer's hyper-parameters of
  /// every group are its optimizer.params (else torch Adam's defaults):
  /// DeepSpeed's loader restores them.
  llvm::json::Object config;
  /// universal_checkpoint_info, as JSON (for a split into TP ranks).
  std::optional<llvm::json::Value> universalInfo;
};

/// Which part of the checks made on opening a DeepSpeed checkpoint this
/// process makes: of the comparisons of copies (module weights with their
/// fp32 masters, and a pipeline's tied parameters across their stages;
/// every byte of both read), only those of the parameters given to
/// process `process` of `processes`, divided by bytes as a group divides
/// its work (ucp/Engine/GroupOutputs.h). Every other check is made whole.
/// The group's agreement on the open then makes the whole check; the
/// default is one process making all of it.
struct CheckShare {
  int process = 0;
  int processes = 1;
  /// Whether to keep what that comparison read (getOpenReads), for a
  /// `check` that follows.
  bool keepReads = false;
  /// Whether to make those comparisons at all: a group whose input is
  /// node-local opens once without them, to learn what they will read
  /// (getWeightCheckReads) and bring those bytes, then again with them.
  bool compareWeights = true;
};

/// A DeepSpeed checkpoint folder, validated and memory-mapped. As a
/// CheckpointSource its tensors are the trainable parameters (in getParams()
/// order, each over the grid with its fp32 master and, once the optimizer
/// has stepped, its moments), then the module buffers and frozen
/// parameters the model states hold whole (their weights); its aliases are
/// the model states' shared_params.
class DeepSpeedCheckpoint final : public CheckpointSource {
public:
  /// Opens the checkpoint in `folder` (`CKPT/TAG`).
  static llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>>
  open(llvm::StringRef folder, CheckShare share = {});
  /// The bytes opening reads on process `share.process` of
  /// `share.processes` beyond the records' pickles: what it copies into
  /// memory (views that are not row-major, the storages of a Universal
  /// folder's optimizer_state.pt its templates keep), and the comparisons of
  /// copies given to it (of its parameters, the weights and the masters; a tied
  /// parameter's optimizer states on every stage; ZeRO stage 0's two optimizer
  /// records).
  llvm::Expected<std::vector<FileBytes>>
  getWeightCheckReads(CheckShare share) const;
  /// Opens the Universal checkpoint in `folder` (DeepSpeed's
  /// ds_to_universal output, or ds-to-universal's) as the checkpoint of
  /// one DP rank holding every parameter whole: each parameter's map
  /// holds its full tensor on rank 0, read from `zero/<name>/<state>.pt`;
  /// the model states are the folder's, and each TP rank's optimizer file
  /// is rebuilt from `zero/optimizer_state.pt` and the steps, its
  /// partitions left empty (a template for writing the ZeRO files again).
  static llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>>
  openUniversal(llvm::StringRef folder);
  /// Makes the checkpoint a ZeRO-3 job of one rank would hold, every
  /// parameter whole, before its optimizer's first step: the fp32 masters
  /// are `weights`' tensors (widened where they are not fp32), there are no
  /// Adam moments, and the module's weights are rebuilt from the masters.
  /// Retargeted, it is the checkpoint of a fresh run at any topology.
  static llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>>
  openFresh(const CheckpointSource &weights,
            const FreshCheckpointOptions &options);
  /// Whether it was opened by openUniversal (or openFresh).
  bool isUniversal() const { return universal; }
  /// Whether it was made by openFresh.
  bool isFresh() const { return freshSource != nullptr; }

  llvm::StringRef getFolder() const { return folder; }
  int64_t getTpDegree() const { return tp; }
  int64_t getDpDegree() const { return dp; }
  /// The DP degree the model states record: getDpDegree() for a ZeRO
  /// folder; for a Universal one, the run it was converted from.
  int64_t getRecordedDpDegree() const { return recordedDp; }
  /// The DeepSpeed version that wrote the files (`ds_version`).
  llvm::StringRef getDeepSpeedVersion() const { return dsVersion; }
  /// The training step the files were saved at (`global_steps`).
  int64_t getGlobalSteps() const { return globalSteps; }
  /// The pipeline stages: 1 without a pipeline.
  int64_t getPipelineDegree() const { return pp; }
  /// Whether the run is a PipelineModule's: its module weights in layer
  /// files (one per layer and TP rank) rather than the model states, its
  /// parameters named by layer. A Universal folder of such a run has no
  /// layer files; its model states' module is None.
  bool isPipeline() const { return pipeline; }
  /// The dtype of the module's weights as ds_config gives it (bf16, fp16,
  /// else fp32); read from a Universal folder, whose pipeline layer files
  /// are made anew.
  DType getModuleType() const { return moduleType; }
  /// The model-parallel ranks of the grid: stages x TP ranks.
  int64_t getModelParallelDegree() const { return pp * tp; }
  /// What the optimizer files' names start with: "bf16_" for bf16 runs,
  /// else "".
  llvm::StringRef getOptimizerFilePrefix() const { return optimizerPrefix; }
  /// 1, 2 or 3 (a BF16_Optimizer checkpoint, which records none, is 1).
  int getZeroStage() const { return stage; }
  /// Whether BF16_Optimizer saved it (its optimizer files record no ZeRO
  /// stage).
  bool isBf16Optimizer() const { return bf16Optimizer; }
  /// The AutoEP layers (`ds_autoep_layers`), in moe_layer_id order; empty
  /// without expert parallelism.
  llvm::ArrayRef<AutoEpLayer> getAutoEpLayers() const { return autoEpLayers; }
  /// The AutoEP size, 0 without expert parallelism.
  int64_t getAutoEpSize() const {
    return autoEpLayers.empty() ? 0 : autoEpLayers.front().epSize;
  }
  /// ZeRO-1/2 AutoEP: the per-expert model-state files (low-precision
  /// weights), by layer and then global expert id.
  llvm::ArrayRef<std::vector<std::string>> getExpertFiles() const {
    return expertFiles;
  }
  /// In group order, then in the group's order.
  llvm::ArrayRef<DeepSpeedParam> getParams() const { return params; }
  /// Whether parameter group `group` holds `state`: the fp32 weights
  /// always, the Adam moments once the optimizer has stepped (torch's Adam
  /// makes them at the first step).
  bool hasState(size_t group, TensorState state) const {
    return state == TensorState::Master || groupMoments[group];
  }
  /// The names of the states parameter group `group` lacks, as "exp_avg,
  /// exp_avg_sq", or "".
  std::string getMissingStates(size_t group) const;

  /// The fragment of `state` of `param` that grid rank `rank` holds (a
  /// state it has: hasState).
  TensorData getFragment(const DeepSpeedParam &param, int64_t rank,
                         TensorState state) const;
  /// The mapped file holding that fragment; null where it is in memory.
  const llvm::MemoryBuffer *getFragmentBuffer(const DeepSpeedParam &param,
                                              int64_t rank,
                                              TensorState state) const;
  /// Drops from memory the pages of `bytes` from `data`, inside that
  /// fragment: done reading them.
  void releaseFragmentPages(const DeepSpeedParam &param, int64_t rank,
                            TensorState state, const char *data,
                            size_t bytes) const;
  /// A run of `program` (planned from `param.map`) moving `state`: every
  /// grid rank's fragment as a source, at the state's scale power, on fp32
  /// elements.
  ProgramRun getFragmentRun(const DeepSpeedParam &param, TensorState state,
                            const CopyProgram &program) const;
  /// What every job checks of `param`'s `state` (a master or moment) as it
  /// reads it: replicated elements equal on every holder (P2,
  /// checkReplicas) and, with `checkValues`, no NaN, Inf or (exp_avg_sq)
  /// negative value (checkStateValues), naming the fragment's file and the
  /// first such element.
  llvm::Error checkFragments(const DeepSpeedParam &param, TensorState state,
                             bool checkValues) const;
  // CheckpointSource.
  llvm::StringRef getPath() const override { return folder; }
  llvm::ArrayRef<CheckpointTensor> getTensors() const override {
    return tensors;
  }
  const char *getShard(size_t index, TensorState state,
                       int64_t rank) const override;
  const llvm::MemoryBuffer *getShardBuffer(size_t index, TensorState state,
                                           int64_t rank) const override;
  const OpenReads *getOpenReads() const override { return openReads.get(); }
  std::vector<std::pair<std::string, std::string>> getAliases() const override {
    return aliases;
  }
  llvm::Error checkComplete() const override;
  /// The model-state, optimizer, layer, expert and Universal state files.
  std::vector<std::string> getFiles() const override;
  /// ZeRO-1/2's: the tail of each rank's flat partition past its last
  /// fragment, which DeepSpeed fills with zeros (ZeRO-3 leaves its padding
  /// uninitialised: none).
  std::vector<Padding> getPaddings() const override;
  std::string getShardFile(size_t index, TensorState state,
                           int64_t rank) const override;

  /// The TP map of frozen parameter `name` (its TP shards, each whole),
  /// if the checkpoint holds it.
  const ParamMap *getFrozenTpMap(llvm::StringRef name) const {
    auto found = frozenTpMaps.find(name.str());
    return found == frozenTpMaps.end() ? nullptr : &found->second;
  }
  /// The categories of universal_checkpoint_info, if the model states
  /// carry it.
  const std::optional<LegacyCategories> &getCategories() const {
    return categories;
  }
  /// The model-state files: one per model-parallel rank (ZeRO-1/2) or per
  /// grid rank (ZeRO-3), in grid order.
  llvm::ArrayRef<std::unique_ptr<TorchFile>> getModelFiles() const {
    return modelFiles;
  }
  /// A module weight in a pipeline run's layer file: the weight of `rank`'s
  /// shard, `tensor` of layer file `file`.
  struct LayerWeight {
    int64_t rank = 0;
    size_t file = 0;
    PickleRef tensor{};
  };
  /// The layer files of a pipeline run, by layer and TP rank.
  llvm::ArrayRef<std::unique_ptr<TorchFile>> getLayerFiles() const {
    return layerFiles;
  }
  /// The module weights of `param` in the layer files: one per stage's
  /// copy for a parameter of one layer; for a tied parameter, every layer
  /// file holding it, once per stage holding it.
  llvm::ArrayRef<LayerWeight> getLayerWeights(const DeepSpeedParam &param) const {
    if (getIndex(param) >= layerWeights.size()) // No layer files.
      return {};
    return layerWeights[getIndex(param)];
  }
  /// A pipeline run's parameter group `group` on stage `stage`: its
  /// parameters (indices into getParams()) in the stage's order, the order
  /// ZeRO flattened them in (none where the stage has no such group).
  llvm::ArrayRef<size_t> getStageGroup(int64_t stage, size_t group) const {
    if (size_t(stage) >= stageGroups.size() ||
        group >= stageGroups[stage].size())
      return {};
    return stageGroups[stage][group];
  }
  /// The flat partition of `state` of parameter group `group` in grid rank
  /// `rank`'s optimizer file (a tensor of that file's document).
  PickleRef getPartition(int64_t rank, size_t group, TensorState state) const {
    return ranks[rank].partitions[group][static_cast<size_t>(state)];
  }
  /// The step of parameter group `group` in grid rank `rank`'s optimizer
  /// file (a 0-d tensor or a number), if it records one.
  std::optional<PickleRef> getStep(int64_t rank, size_t group) const {
    return ranks[rank].steps[group];
  }
  /// The optimizer file of grid rank `rank`.
  const TorchFile &getOptimizerFile(int64_t rank) const {
    return *ranks[rank].file;
  }

  /// What one grid rank's optimizer file holds per group: the flat
  /// partitions of each state and the step (a 0-d tensor), if any.
  struct RankFile {
    std::unique_ptr<TorchFile> file;
    std::vector<std::array<PickleRef, 3>> partitions;
    std::vector<std::optional<PickleRef>> steps;
  };

private:
  friend class DeepSpeedReader;
  size_t getIndex(const DeepSpeedParam &param) const {
    return &param - params.data();
  }
  DeepSpeedCheckpoint() = default;

  std::string folder, optimizerPrefix, dsVersion;
  int64_t tp = 1, dp = 1, pp = 1, recordedDp = 1, globalSteps = 0;
  int stage = 1;
  DType moduleType = DType::F32;
  bool universal = false, bf16Optimizer = false, pipeline = false;
  std::vector<DeepSpeedParam> params;
  /// Per group: whether it holds the Adam moments.
  std::vector<bool> groupMoments;
  std::optional<LegacyCategories> categories;
  std::vector<AutoEpLayer> autoEpLayers;
  std::vector<std::vector<std::string>> expertFiles;
  std::vector<std::unique_ptr<TorchFile>> modelFiles;
  std::vector<std::unique_ptr<TorchFile>> layerFiles;
  /// Per parameter (a pipeline run's).
  std::vector<std::vector<LayerWeight>> layerWeights;
  /// A pipeline run's: per stage and group, its parameters in order.
  std::vector<std::vector<std::vector<size_t>>> stageGroups;
  /// Per grid rank.
  std::vector<RankFile> ranks;
  /// A Universal checkpoint's: per parameter (in getParams() order) and
  /// state, its file and its full tensor there.
  std::vector<std::array<std::unique_ptr<TorchFile>, 3>> universalFiles;
  std::vector<std::array<TensorData, 3>> universalStates;
  /// openFresh's weights, and the index there of each parameter.
  const CheckpointSource *freshSource = nullptr;
  std::vector<size_t> freshIndex;
  /// As a CheckpointSource: the tensors, the bytes of those the model
  /// states hold whole (after the parameters'), the aliases, and why some
  /// tensors could not be bound, if any.
  std::vector<CheckpointTensor> tensors;
  /// A shard of a tensor the model states hold: the file and its bytes.
  struct SavedShard {
    const TorchFile *file;
    const char *data;
  };
  /// Per tensor after the parameters, per rank of its map.
  std::vector<std::vector<SavedShard>> savedShards;
  /// The frozen parameters' TP maps, by name.
  std::map<std::string, ParamMap> frozenTpMaps;
  /// What opening read, where CheckShare::keepReads asked for it.
  std::unique_ptr<OpenReads> openReads;
  std::deque<std::string> savedCopies;
  /// What opening read into memory (the source bytes of savedCopies, the
  /// storages a Universal folder's templates keep from its
  /// optimizer_state.pt): getWeightCheckReads names it.
  std::vector<FileBytes> readIntoMemory;
  std::vector<std::pair<std::string, std::string>> aliases;
  std::string incomplete;
};

} // namespace ucp

#endif // UCP_DEEPSPEED_DEEPSPEEDCHECKPOINT_H

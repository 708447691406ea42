//===- Retargeter.h - The steps of retargeting a checkpoint -----*- C++ -*-===//
//
// Internal to the Universal library. A Retargeter plans a checkpoint's
// move to another DP and TP degree and ZeRO stage (each parameter's TP map
// at the target's degree, RetargetTensorParallel.cpp; the target's ZeRO
// partitioning of each group; each parameter's map over the target grid;
// the copy programs), then writes the target's files: optimizer states per
// grid rank (RetargetTensorStates.cpp) and model states per TP rank, or
// per grid rank for ZeRO-3 (RetargetModelStates.cpp), each document the
// source's with what the topology decides replaced, and the data filled
// from the memory-mapped source fragments (Retarget.cpp). The source may
// be a Universal checkpoint read as one DP rank of whole tensors. An AutoEP
// checkpoint's expert group is partitioned over EP x EDP ranks instead of
// TP x DP (RetargetExpertParallel.cpp). Frozen parameters, which only the
// model states keep, take the target stage's form
// (RetargetFrozenParams.cpp). A pipeline's groups are per stage:
// each target stage's parameters, its model-parallel ranks `stage * tp +
// t`, and its layer files copied (RetargetPipeline.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DEEPSPEED_RETARGETER_H
#define UCP_LIB_DEEPSPEED_RETARGETER_H

#include "ucp/DeepSpeed/Retarget.h"
#include "ucp/DeepSpeed/ZeroFlattening.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Formats/Torch/PickleCursor.h"
#include "ucp/Formats/Torch/TorchFileWriter.h"

#include "llvm/ADT/DenseMap.h"

#include <atomic>
#include <mutex>
#include <set>

namespace ucp {

/// The value at `keys` under `root`, if every step is there.
std::optional<PickleCursor> findPath(const PickleCursor &root,
                                     llvm::ArrayRef<const char *> keys);

/// Maps the value at `keys` under `root` to `value`, if it is there.
void replacePath(const PickleCursor &root, llvm::ArrayRef<const char *> keys,
                 PickleRef value,
                 llvm::DenseMap<PickleRef, PickleRef> &replaced);

/// Whether the model states of `checkpoint` record frozen parameters.
bool hasFrozenParams(const DeepSpeedCheckpoint &checkpoint);

/// ds_config's ZeRO stage and AutoEP size.
inline constexpr const char *kStagePath[] = {"ds_config", "zero_optimization",
                                             "stage"};
inline constexpr const char *kAutoEpSizePath[] = {
    "ds_config", "expert_parallel", "autoep_size"};

class Retargeter {
public:
  Retargeter(const DeepSpeedCheckpoint &checkpoint,
             const RetargetOptions &options)
      : checkpoint(checkpoint), options(options),
        tp(options.tp.value_or(options.targetMaps.empty()
                                   ? checkpoint.getTpDegree()
                                   : options.targetMaps[0].worldSize)),
        sourceTp(checkpoint.getTpDegree()),
        pp(options.pp.value_or(checkpoint.getPipelineDegree())),
        stage(options.zeroStage.value_or(checkpoint.getZeroStage())),
        epSize(options.autoEpSize.value_or(checkpoint.getAutoEpSize())) {}

  /// Checks the target and plans every copy; writes nothing.
  llvm::Error plan();
  /// Divides the target files among the processes of the options' group,
  /// and returns what they must agree on.
  GroupFingerprint divideOutputs();
  /// The bytes of the source that writing this process's target files
  /// reads (RetargetReads.cpp); after divideOutputs.
  llvm::Expected<std::vector<FileBytes>> getReads() const;
  /// Writes the target files this process holds into `folder`.
  llvm::Error write(llvm::StringRef folder);
  int64_t getBytesWritten() const { return bytesWritten; }
  size_t getFilesWritten() const { return filesWritten; }

private:
  /// A storage of a target file and what fills it.
  struct NewStorage {
    enum Fill {
      /// `elements` of `state` from the start of the rank's partition of
      /// `group` (optimizer states).
      Partition,
      /// The source's storage of the same key, its first `kept` elements,
      /// then zeros (the model states' flat weights of `group`).
      SourceWeights,
      /// The weights of `group` rebuilt from the fp32 masters.
      MasterWeights,
      /// No elements (ZeRO-3's placeholders for the weights).
      Empty,
      /// A frozen parameter's shard on target grid rank `rank`
      /// (buildFrozenShard): `group` is its index in the checkpoint's
      /// tensors; its first `kept` elements, then zeros.
      Frozen,
    };
    Fill fill;
    std::string key;
    DType type = DType::F32;
    size_t group = 0, state = 0;
    int64_t elements = 0, kept = 0;
    int64_t rank = 0;
  };
  /// A target file's document and the storages to fill.
  struct TargetFile {
    PickleDocument document;
    std::vector<NewStorage> storages;
  };

  /// Adds what writing `file` for grid rank (d, t) reads: the storages
  /// it copies from `source` (none where `source` is null: a template
  /// built in memory, whose bytes opening read), and what fills each new
  /// storage.
  void addTargetFileReads(const TargetFile &file, const TorchFile *source,
                          int64_t d, int64_t t,
                          std::vector<FileBytes> &reads) const;

  /// Refuses a target that cannot be written, before any planning.
  llvm::Error checkTarget() const;

  /// The target's model-parallel ranks: stages x TP ranks.
  int64_t getModelParallelDegree() const { return pp * tp; }
  /// Where grid rank (d, m) sits in a group's partitioning: its
  /// model-parallel rank (stage and TP rank, or EP rank for experts), its
  /// rank among the DP (or EDP) ranks of that, and its grid rank.
  struct GroupRank {
    int64_t outer, inner, world;
  };
  GroupRank getGroupRank(size_t g, int64_t d, int64_t m) const {
    int64_t world = d * getModelParallelDegree() + m;
    return {world % outerDegrees[g], world / outerDegrees[g], world};
  }
  /// The DP ranks each of group `g`'s model-parallel ranks is cut by.
  int64_t getGroupDpDegree(size_t g) const {
    return options.dp * getModelParallelDegree() / outerDegrees[g];
  }
  /// The parameters of group `g` on model-parallel rank `o` (its stage's),
  /// in the order ZeRO flattens them.
  llvm::ArrayRef<size_t> getGroupParams(size_t g, int64_t o) const {
    return stageGroups[isExpertGroup(g) ? 0 : o / tp][g];
  }

  // Frozen parameters (RetargetFrozenParams.cpp).
  /// Whether the target keeps frozen parameters in another form than the
  /// source (another stage's, or ZeRO-3 at another DP degree).
  bool rewritesFrozenParams() const;
  /// Plans each frozen parameter from its source map to the target's,
  /// where rewritesFrozenParams().
  llvm::Error planFrozenParams();
  /// A frozen parameter's shard on DP rank d: `elements` (ZeRO-3's slots of
  /// ceil(numel / dp), or the whole tensor), the first `kept` real.
  struct FrozenSlots {
    int64_t elements, kept;
  };
  FrozenSlots getFrozenSlots(int64_t elements, int64_t d) const;
  /// Frozen parameter `frozen`'s TP map at the target: the source's, one
  /// given by --target-map or recorded at the target's degree
  /// (ucp_tp_maps), or whole at TP 1.
  llvm::Expected<ParamMap>
  getFrozenTargetTpMap(const CheckpointTensor &frozen) const;
  /// Maps the frozen parameters' module tensors and records under `root`
  /// (frozen_param_shapes, frozen_param_fragments) to grid rank (d, t)'s
  /// form in the target's stage, new storages from `nextKey` on.
  llvm::Error
  replaceFrozenParams(const PickleCursor &root, const PickleCursor &module,
                      int64_t d, int64_t t, int64_t &nextKey,
                      PickleBuilder &b,
                      llvm::DenseMap<PickleRef, PickleRef> &replaced,
                      std::vector<NewStorage> &storages) const;
  /// The bytes of `storage` (a Frozen one).
  void buildFrozenShard(const NewStorage &storage,
                        std::vector<char> &out) const;

  // Pipeline stages (RetargetPipeline.cpp).
  /// Refuses a pipeline target that cannot be written.
  llvm::Error checkPipeline() const;
  /// Whether the target's stages run other layers than the source's.
  bool changesStages() const {
    return pp != checkpoint.getPipelineDegree() || !options.ppPartition.empty();
  }
  /// Each parameter's target stages and each stage's groups; for a
  /// pipeline, each parameter's TP map placed on its target stages.
  llvm::Error planStages();
  /// The target stages holding parameter `p`, at a new stage count.
  llvm::Expected<std::vector<int64_t>> getTargetStages(size_t p) const;
  /// Orders the parameters of target stage `stage` as its PipelineModule
  /// lists them: tied modules first, by the layer first using them, then
  /// each layer's, by layer.
  void sortStageParams(int64_t stage, std::vector<size_t> &params) const;
  /// param_shapes of model-parallel rank `m`: per group, each parameter's
  /// shard shape there.
  PickleRef buildParamShapes(PickleBuilder &b, int64_t m) const;
  /// Maps what new stages change in rank `m`'s model states under `root`:
  /// param_shapes and the pipeline degree.
  void replacePipeline(const PickleCursor &root, int64_t m, PickleBuilder &b,
                       llvm::DenseMap<PickleRef, PickleRef> &replaced) const;

  // Layer files (RetargetLayerFiles.cpp).
  /// From a Universal folder of a pipeline run: the parameters and keys of
  /// each layer file to make.
  llvm::Error planLayerFiles();
  /// The layer files the target gets.
  size_t getLayerFileCount() const;
  /// Copies the source's layer files into `folder`, or makes them from the
  /// fp32 masters where the source is a Universal folder.
  llvm::Error writeLayerFiles(llvm::StringRef folder);
  llvm::Error writeLayerFilesFromMasters(llvm::StringRef folder);
  /// A run of parameter `param`'s fp32 masters: `elements` from `first`.
  struct MasterRun {
    const DeepSpeedParam *param;
    int64_t first, elements;
  };
  /// Writes `document` to `file`, its storages "0", "1", ... each run of
  /// `runs` narrowed to `type` (its pages released once read): the module
  /// weights a Universal folder does not keep, made from the masters.
  llvm::Error writeMastersFile(llvm::StringRef file, PickleDocument document,
                               llvm::ArrayRef<MasterRun> runs, DType type);

  // Expert parallelism (RetargetExpertParallel.cpp).
  /// Refuses an AutoEP target that cannot be written.
  llvm::Error checkExpertParallel() const;
  /// Whether group `g` holds AutoEP experts.
  bool isExpertGroup(size_t g) const {
    return !groups[g].empty() &&
           checkpoint.getParams()[groups[g].front()].expertLayer.has_value();
  }
  bool changesEp() const { return epSize != checkpoint.getAutoEpSize(); }
  /// The map of expert parameter `param` over the target's EP ranks.
  llvm::Expected<ParamMap>
  buildTargetExpertMap(const DeepSpeedParam &param) const;
  /// Maps what the target's EP degree and grid rank `world` change in the
  /// model states under `root`: ds_config's autoep_size, the experts'
  /// param_shapes, and every ds_autoep_layers record.
  void
  replaceExpertParallel(const PickleCursor &root, int64_t world,
                        PickleBuilder &b,
                        llvm::DenseMap<PickleRef, PickleRef> &replaced) const;
  /// Maps the experts' param_shapes under `root` to their EP-local shapes
  /// at the target.
  void
  replaceExpertShapes(const PickleCursor &root, PickleBuilder &b,
                      llvm::DenseMap<PickleRef, PickleRef> &replaced) const;
  /// Maps the expert group's name in the param groups under `groups` to the
  /// target's, and ZeRO-3's ds_zero_partition_groups under `states` to
  /// grid rank (d, t)'s.
  void
  replaceExpertGroups(const PickleCursor &states,
                      const PickleCursor &paramGroups, int64_t d, int64_t t,
                      PickleBuilder &b,
                      llvm::DenseMap<PickleRef, PickleRef> &replaced) const;
  /// Copies the per-expert files (ZeRO-1/2) into `folder`, or makes them
  /// from the fp32 masters where the source is a Universal folder.
  llvm::Error writeExpertFiles(llvm::StringRef folder);
  llvm::Error writeExpertFilesFromMasters(llvm::StringRef folder);
  /// ep_size_<N>, the expert group's name at the target.
  std::string getExpertGroupName() const {
    return "ep_size_" + std::to_string(epSize);
  }

  /// Each parameter's TP map at the target's degree
  /// (RetargetTensorParallel.cpp).
  llvm::Error planTensorParallel();
  llvm::Error takeTargetMaps();
  /// Takes `map` (a --target-map, or one recorded at the target's degree)
  /// as `param`'s TP map; an error starting with `origin` where its shape
  /// is not the parameter's.
  llvm::Error takeMap(const DeepSpeedParam &param, const ParamMap &map,
                      const std::string &origin);
  /// The target's affine_map: the maps --target-map gives, or back at a
  /// degree whose run carried one, the recorded maps that were it
  /// (ucp_tp_affine); none otherwise.
  std::optional<PickleRef> buildAffineMap(PickleBuilder &b) const;
  /// ucp_tp_affine for the target: per recorded degree, the names of the
  /// maps that were that run's affine_map.
  std::optional<PickleRef> buildRecordedAffineNames(PickleBuilder &b) const;
  /// ucp_tp_maps for the target: the TP maps the source records at other
  /// degrees than the target's, and at a target of TP 1 the source's own at
  /// its degree, as `{"DEGREE": map document}`.
  std::optional<PickleRef> buildRecordedMaps(PickleBuilder &b) const;
  bool changesTp() const { return tp != sourceTp; }
  /// Whether the target's TP maps may differ from the source's.
  bool changesTpMaps() const {
    return changesTp() || !options.targetMaps.empty();
  }
  /// The source model-parallel rank whose files are the templates of
  /// target rank `m`'s: its own, or rank 0's at a new TP degree or stages.
  int64_t getTemplateRank(int64_t m) const {
    return changesTp() || changesStages() ? 0 : m;
  }
  /// Maps what new TP maps change in TP rank `t`'s model states under
  /// `root`: param_shapes, the TP degree, sub_param_shard_widths, the
  /// affine_map of universal_checkpoint_info.
  void
  replaceTensorParallel(const PickleCursor &root, int64_t t, PickleBuilder &b,
                        llvm::DenseMap<PickleRef, PickleRef> &replaced) const;
  /// Whether the target's model states hold weights the source's do not
  /// (ZeRO-3's hold none; another TP degree cuts them anew): rebuilt from
  /// the fp32 masters.
  bool rebuildsWeights() const {
    return !isZero3Target() && (isZero3Source() || changesTpMaps());
  }
  bool isZero3Source() const { return checkpoint.getZeroStage() == 3; }
  bool isZero3Target() const { return stage == 3; }

  // Optimizer states (RetargetTensorStates.cpp).
  llvm::Expected<TargetFile> buildTensorStates(int64_t d, int64_t t) const;
  /// Maps the optimizer's dict `states` of `source` (an optimizer file's
  /// optimizer_state_dict, or the model states' optimizer at ZeRO stage 0)
  /// to grid rank (d, t)'s, its partitions new storages from `nextKey` on.
  llvm::Error
  replaceOptimizerStates(const TorchFile &source, const PickleCursor &states,
                         int64_t d, int64_t t, int64_t &nextKey,
                         PickleBuilder &b,
                         llvm::DenseMap<PickleRef, PickleRef> &replaced,
                         std::vector<NewStorage> &storages) const;
  /// Maps ds_config's ZeRO stage under `root` to the target's; a
  /// BF16_Optimizer run's 0 stays, its form being the same.
  void replaceZeroStage(const PickleCursor &root, PickleBuilder &b,
                        llvm::DenseMap<PickleRef, PickleRef> &replaced) const;
  llvm::Expected<std::vector<std::pair<PickleRef, PickleRef>>>
  buildOptimizerDictItems(llvm::StringRef sourcePath, const PickleCursor &root,
                          const PickleCursor &states,
                          llvm::StringMap<PickleRef> &values, PickleBuilder &b,
                          llvm::DenseMap<PickleRef, PickleRef> &replaced) const;
  PickleRef buildSliceMappings(PickleBuilder &b, size_t g, int64_t d,
                               int64_t t) const;
  llvm::Error writeTensorStates(int64_t d, int64_t t, llvm::StringRef folder);

  // Model states (RetargetModelStates.cpp).
  /// Model states of TP rank `t`, as DP rank `d` writes them.
  llvm::Expected<TargetFile> buildModelStates(int64_t d, int64_t t) const;
  llvm::Error
  replaceModuleWeights(const PickleCursor &module, size_t g, int64_t t,
                       int64_t &nextKey, PickleBuilder &b,
                       llvm::DenseMap<PickleRef, PickleRef> &replaced,
                       std::vector<NewStorage> &storages) const;
  /// Writes the model states of grid rank (d, t); ZeRO-1/2 have one file
  /// per model-parallel rank t (d = 0).
  llvm::Error writeModelStates(int64_t d, int64_t t, llvm::StringRef folder);
  /// Writes `file` at `path` for grid rank (d, t): its new storages, the
  /// rest copied from `source`.
  llvm::Error writeTargetFile(llvm::StringRef path, const TargetFile &file,
                              const TorchFile &source, int64_t d, int64_t t,
                              bool releaseSource);
  /// Copies source file `file` into `folder` under its name.
  llvm::Error copySourceFile(llvm::StringRef file, llvm::StringRef folder);
  /// Writes `storages` into `writer` (the rest are the source's).
  llvm::Error writeStorages(TorchFileWriter &writer, const TorchFile &source,
                            int64_t d, int64_t t,
                            llvm::ArrayRef<NewStorage> storages,
                            bool releaseSource);

  // Data (Retarget.cpp).
  /// A target partition as pieces to write one after the other: runs of
  /// the mapped source fragments, fragments executed into buffers of their
  /// own, and padding from a buffer of zeros.
  struct PartitionPieces {
    std::vector<llvm::StringRef> pieces;
    /// Per parameter of the group: its executed fragment, if it was.
    std::vector<std::vector<char>> buffers;
    /// The source runs written straight, to release once written.
    struct Source {
      const DeepSpeedParam *param;
      int64_t rank;
      llvm::StringRef bytes;
    };
    std::vector<Source> sources;
  };
  /// The parameters of group g with elements in partition (g, d, t): what
  /// writing it reads.
  std::vector<size_t> getPartitionParams(size_t g, int64_t d, int64_t t) const;
  /// Checks optimizer state `state` of the parameters of partition
  /// (g, d, t) as read (checkFragments: replicas, and values unless told
  /// not to), each parameter once: every parameter is checked by the
  /// partitions holding its elements.
  llvm::Error checkPartitionFragments(size_t g, int64_t d, int64_t t,
                                      size_t state);
  /// The first `elements` of partition (g, d, t) of `state`, padding from
  /// `zeros`.
  PartitionPieces getPartitionPieces(size_t g, int64_t d, int64_t t,
                                     size_t state, int64_t elements,
                                     llvm::StringRef zeros) const;
  /// Releases the pages of the fragments of `state` of `param` as a
  /// program has read them.
  auto getFragmentReleaser(const DeepSpeedParam &param,
                           TensorState state) const {
    return [this, &param, state](int64_t rank, const char *data, size_t bytes) {
      checkpoint.releaseFragmentPages(param, rank, state, data, bytes);
    };
  }
  /// The weight `i` of group `g` on TP rank `t` in `type`, from the fp32
  /// masters, into `out`.
  void buildWeights(size_t g, size_t i, int64_t t, DType type,
                    std::vector<char> &out) const;

  const DeepSpeedCheckpoint &checkpoint;
  const RetargetOptions &options;
  /// The target's TP degree, and the source's; the target's stages.
  int64_t tp, sourceTp, pp;
  /// The target's ZeRO stage.
  int stage;
  /// The target's AutoEP size, 0 without expert parallelism.
  int64_t epSize;
  /// Per group: its model-parallel degree (the TP degree, or the EP degree
  /// for experts).
  std::vector<int64_t> outerDegrees;
  /// Per parameter, in getParams() order: its map over the target's TP
  /// ranks, and the shape of each TP rank's shard.
  std::vector<ParamMap> tpMaps;
  std::vector<std::vector<Extents>> tpShapes;
  /// At a new TP degree: the categories, sub-parameter widths recomputed,
  /// which the target's universal_checkpoint_info records.
  std::optional<LegacyCategories> targetCategories;
  /// Parameter indices of each group, in the group's order.
  std::vector<std::vector<size_t>> groups;
  /// Per target stage and group: its parameters, in its order (the groups
  /// themselves without a pipeline); and each parameter's position there
  /// (-1 where the stage does not hold it).
  std::vector<std::vector<std::vector<size_t>>> stageGroups;
  std::vector<std::vector<int64_t>> stagePositions;
  /// Per group and model-parallel rank: the target's partitioning.
  std::vector<std::vector<ZeroGroupLayout>> layouts;
  /// Each parameter from the source grid to the target grid, for every
  /// state.
  TransferPrograms programs;
  /// Where rebuildsWeights(): each parameter's fp32 weights from the
  /// source grid to the target's TP shards, whole.
  TransferPrograms weightPrograms;
  /// planFrozenParams's: the frozen parameters' indices in the
  /// checkpoint's tensors, and their programs.
  std::vector<size_t> frozenTensors;
  TransferPrograms frozenPrograms;
  /// Per planned frozen parameter, its shard shape on each target TP rank.
  std::vector<std::vector<Extents>> frozenShapes;
  /// planLayerFiles's: per layer, its parameters and their keys, in the
  /// file's order.
  std::map<int64_t, std::vector<size_t>> layerParams;
  std::map<int64_t, std::vector<std::string>> layerKeys;
  /// The (parameter, optimizer state) pairs checkPartitionFragments has
  /// checked: each once, however many target ranks read it.
  std::set<std::pair<size_t, size_t>> valuesChecked;
  std::mutex valuesCheckedMutex;
  std::atomic<int64_t> bytesWritten{0};
  std::atomic<size_t> filesWritten{0};
  /// The target files in the order they are written, and who writes
  /// each: model states by (DP rank, model-parallel rank), optimizer
  /// states by grid rank, the layer files and the expert files.
  OutputShare share;
  std::map<std::pair<int64_t, int64_t>, size_t> modelOutputs, tensorOutputs;
  size_t layerOutput = 0, expertOutput = 0;
};

} // namespace ucp

#endif // UCP_LIB_DEEPSPEED_RETARGETER_H

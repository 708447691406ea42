//===- Retarget.h - A DeepSpeed checkpoint at another topology ----*- C++
//-*-===//
//
// The checkpoint a DeepSpeed job at another DP degree, TP degree and ZeRO
// stage (1 to 3, across the ZeRO-1/2 and ZeRO-3 forms too) would have
// saved, written straight from the source's files: every parameter's map
// over the source grid is planned into its map over the target grid (its
// TP map at the target's degree, from universal_checkpoint_info's split
// rules or given, each TP shard cut by the target's ZeRO partitioning), and
// each target partition is executed from the memory-mapped source
// fragments, with no Universal intermediate and no full tensor. Model
// states and optimizer files are the source's with what the topology
// changes replaced: dp_world_size and the TP degree, the stage, the module
// weights (flat bf16 buffers padded for the new DP degree, rebuilt from the
// fp32 masters where the source holds none or other TP shards, or ZeRO-3's
// empty placeholders), param_shapes, partitions, group paddings, partition
// counts and param_slice_mappings. An AutoEP checkpoint's routed experts
// move to the target's autoep_size the same way: each expert parameter's
// map places its experts over the target's EP ranks, each EP rank's block
// cut by its expert-data-parallel ranks (RetargetExpertParallel.cpp). A
// pipeline (PipelineModule) run moves to another number of stages the same
// way: each parameter's map on the target stages running its layer.
// Padding is written as zeros. The source
// may also be a Universal checkpoint (DeepSpeedCheckpoint::openUniversal):
// the offline equivalent of DeepSpeed's load_universal.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DEEPSPEED_RETARGET_H
#define UCP_DEEPSPEED_RETARGET_H

#include "ucp/Support/Progress.h"
#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"

#include <functional>
#include <map>

namespace ucp {

class ProcessGroup;

struct RetargetOptions {
  /// The target's DP degree.
  int64_t dp = 1;
  /// The target's TP degree; the source's if unset.
  std::optional<int64_t> tp;
  /// Explicit maps of the target over its TP ranks, one per trainable
  /// parameter (a map document's), instead of the split rules; their world
  /// size is the target's TP degree.
  std::vector<ParamMap> targetMaps;
  /// The model's num_kv_heads, for the split rules at a new TP degree
  /// where the checkpoint does not record it.
  std::optional<int64_t> numKvHeads;
  /// The target's ZeRO stage (1, 2 or 3); the source's if unset.
  std::optional<int> zeroStage;
  /// An AutoEP checkpoint's target autoep_size (the EP degree of every
  /// AutoEP layer); the source's if unset.
  std::optional<int64_t> autoEpSize;
  /// A pipeline run's target stage count; the source's if unset.
  std::optional<int64_t> pp;
  /// The layers each target stage runs, as DeepSpeed's PipelineModule.parts
  /// (stage s runs layers [ppPartition[s], ppPartition[s + 1])): needed
  /// at another stage count above 1, which the source cannot tell.
  std::vector<int64_t> ppPartition;
  /// Per tied module key: the layers using it (TiedLayerSpec), which decide
  /// the stages holding its parameters at another stage count above 1.
  std::map<std::string, std::vector<int64_t>> ppTiedLayers;
  /// Worker threads (0: every core this process may run on).
  unsigned threads = 0;
  /// Scan every master and moment read for NaN, Inf and negative second
  /// moments, and refuse the checkpoint at the first (ucp/Checkpoint/
  /// ValueCheck.h). Off, such values are moved as they are.
  bool checkValues = true;
  /// Return only once the outputs are on disk.
  bool syncOutputs = true;
  /// Called about once a second with (files done, files, bytes written):
  /// with a group, this process's files.
  ProgressFunction progress;
  /// The processes that share the job (ucp/Engine/GroupOutputs.h), each
  /// writing the files given to it; none: this process alone.
  ProcessGroup *group = nullptr;
  /// With a group whose input is node-local: brings the bytes this
  /// process's files read, once the files are divided.
  InputSupply supplyInput;
};

struct RetargetStats {
  /// What was done instead of writing `latest` (it names the input), for
  /// the user; empty when it was written.
  std::string pointerNote;
  /// The files of the checkpoint (what progress counts), not latest; with
  /// a group, those of every process.
  size_t files = 0;
  int64_t bytesWritten = 0;
  double seconds = 0;
};

/// Writes `checkpoint` at the target topology to the new folder `output`
/// (`OUT/TAG`), and `latest` beside it naming TAG. Nothing is left at
/// `output` unless everything succeeds.
llvm::Expected<RetargetStats>
retargetCheckpoint(const DeepSpeedCheckpoint &checkpoint,
                   llvm::StringRef output, const RetargetOptions &options);

} // namespace ucp

#endif // UCP_DEEPSPEED_RETARGET_H

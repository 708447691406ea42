//===- UniversalDocuments.h - What a Universal checkpoint's files hold -*- C++
//-*-===//
//
// The pickles of the files DeepSpeed's ds_to_universal writes, built as
// documents for TorchFileWriter, with the same keys, classes and order:
//
//   zero/<name>/<state>.pt   ZeRO-3 without TP: the bare flat tensor;
//                            otherwise {cat_dim?, param_n_sub_params?,
//                            sub_param_shape?, vocab_tensor?, param};
//                            an AutoEP expert, at any stage: {param,
//                            cat_dim: 0, is_expert_param: True,
//                            ep_num_experts}
//   zero/<name>/step.pt      ZeRO-1/2: the group's step, as saved
//   zero/optimizer_state.pt  ZeRO-1/2: rank 0's optimizer_state_dict but
//                            its partitions, plus param_groups, with no
//                            group padding and a partition count of the
//                            DP degree per group; ZeRO-3:
//                            rank 0's whole optimizer_state_dict, plus
//                            param_groups
//   mp_rank_*_model_states.pt  copied, but ZeRO-1/2 AutoEP's are saved
//                            again with universal_checkpoint_info's
//                            expert_parameter_patterns without a leading
//                            `.*` and its ds_autoep_layers cut to the six
//                            layer keys (no rank fields)
//
// A state tensor's data is storage "0", which the executors fill; values
// copied from an input keep their storage keys, to be filled by
// TorchFileWriter::copyStoragesFrom.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DEEPSPEED_UNIVERSALDOCUMENTS_H
#define UCP_DEEPSPEED_UNIVERSALDOCUMENTS_H

#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"
#include "ucp/Formats/Torch/PickleCursor.h"

namespace ucp {

/// The storage key of the merged tensor of a state file.
inline constexpr llvm::StringLiteral kStateStorageKey = "0";

/// How one parameter's state files are written.
struct UniversalStateLayout {
  /// The merged tensor's shape (F's, or flat for a bare tensor).
  Extents shape;
  /// ZeRO-3 without TP: the tensor alone, not in a dict.
  bool bare = false;
  /// An AutoEP expert: the experts of its layer (F's first extent).
  std::optional<int64_t> experts;
  UniversalMerge merge;
  /// With merge.subParams: the parameter_with_sub_params entry of the
  /// model states' universal_checkpoint_info, written as a SubparamShape.
  std::optional<PickleCursor> subParamEntry;
};

/// The document of a state file of a parameter laid out as `layout`, its
/// tensor requiring grad as the state's partitions do.
llvm::Expected<PickleDocument>
buildStateDocument(const UniversalStateLayout &layout, bool requiresGrad);

/// The document holding a copy of `value` of `from` alone (step.pt).
PickleDocument buildCopyDocument(const PickleDocument &from, PickleRef value);

/// The document of a ZeRO-1/2 AutoEP model-state file `model` as the
/// Universal folder holds it.
llvm::Expected<PickleDocument>
buildAutoEpModelStatesDocument(const TorchFile &model);

/// The document of zero/optimizer_state.pt, from grid rank 0's optimizer
/// file of `checkpoint`.
llvm::Expected<PickleDocument>
buildTensorStateDocument(const DeepSpeedCheckpoint &checkpoint);

} // namespace ucp

#endif // UCP_DEEPSPEED_UNIVERSALDOCUMENTS_H

//===- PipelineLayout.h - How a PipelineModule lays out its layers -*- C++ -*-===//
//
// DeepSpeed's PipelineModule numbers its layers globally and gives each
// stage a contiguous run of them: stage s runs layers [parts[s],
// parts[s + 1]). Its parameters are named `<layer>.<local name>`, a tied
// module's (TiedLayerSpec) `tied_modules.<key>.<local name>`, held by every
// stage running a layer that uses it. A parameter's map over the
// model-parallel ranks of a pipeline is its TP map on each stage holding
// it, on that stage's ranks `stage * tp + t`, the copies replicas.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DEEPSPEED_PIPELINELAYOUT_H
#define UCP_DEEPSPEED_PIPELINELAYOUT_H

#include "ucp/Map/ParamMap.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace ucp {

/// DeepSpeed's partition_uniform: the stage boundaries (`stages + 1` of
/// them, the first 0, the last `layers`) of `layers` layers in equal runs,
/// the first stages one layer more where `stages` does not divide them.
std::vector<int64_t> getUniformPartition(int64_t layers, int64_t stages);

/// Reads stage boundaries for `stages` stages: `B0,B1,...,BN` (0 first,
/// strictly increasing), or `uniform:L` for getUniformPartition(L, stages).
llvm::Expected<std::vector<int64_t>>
parsePipelinePartition(llvm::StringRef text, int64_t stages);

/// The stage of boundaries `parts` that runs `layer`, if one does.
std::optional<int64_t> getStageOfLayer(llvm::ArrayRef<int64_t> parts,
                                       int64_t layer);

/// "3.fc1.weight" as layer 3 and "fc1.weight"; nothing for another name.
std::optional<std::pair<int64_t, std::string>>
splitLayerName(llvm::StringRef name);

/// The key of a tied module's parameter: "embed" of
/// "tied_modules.embed.weight"; nothing for another name.
std::optional<llvm::StringRef> getTiedKey(llvm::StringRef name);

/// The order in which one stage's PipelineModule lists its parameters
/// `names` (given in any order; each `<layer>.<name>` or a tied module's):
/// the tied modules' first, by `firstUse` of their key (the first layer of
/// the stage using it), then each layer's, by layer; ties in the given
/// order. Returns indices into `names`.
std::vector<size_t>
orderStageParams(llvm::ArrayRef<std::string> names,
                 llvm::function_ref<int64_t(llvm::StringRef key)> firstUse);

/// The order of one module's state_dict keys `keys` (local names such as
/// `fc1.weight`), which a Universal folder does not record, from the order
/// the optimizer lists them in: `keys` as the stage's groups list them,
/// group by group, `groups[i]` the group of `keys[i]`. Each group lists
/// the module's parameters in registration order, so the submodules
/// (the keys up to their last '.') are ordered by merging every group's
/// order of them, a submodule first where nothing orders it after
/// another; a submodule's keys follow in the given order (a >= 2-D
/// weight's group, first, before its bias's). Returns indices into `keys`.
std::vector<size_t> orderModuleKeys(llvm::ArrayRef<std::string> keys,
                                    llvm::ArrayRef<size_t> groups);

/// `stageMap` (a parameter's map over one stage's `tp` TP ranks) placed on
/// each of `stages` of a pipeline of `pp` stages: over `pp * tp` ranks,
/// the copies on several stages replicas of each other.
llvm::Expected<ParamMap> placeOnStages(const ParamMap &stageMap,
                                       llvm::ArrayRef<int64_t> stages,
                                       int64_t tp, int64_t pp);

/// The part of `map` (over the ranks of a pipeline's stages, `tp` each)
/// that stage `stage` holds, over that stage's TP ranks alone.
ParamMap getStageMap(const ParamMap &map, int64_t stage, int64_t tp);

} // namespace ucp

#endif // UCP_DEEPSPEED_PIPELINELAYOUT_H

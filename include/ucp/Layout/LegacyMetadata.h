//===- LegacyMetadata.h - Today's checkpoint metadata as maps ---*- C++ -*-===//
//
// The compatibility contract of spec §4: every key DeepSpeed writes today
// has an image in the IR. Two sources describe a parameter's layout:
//
//  * §4.2, AutoTP's per-parameter restore metadata (`replicated`,
//    `partition_dim`, `partition_sizes`, `logical_shape`, `sub_param_sizes`,
//    `sub_param_shard_widths`); when present it wins;
//  * §4.1, the converter's name categories: regex lists in
//    UNIVERSAL_CHECKPOINT_INFO, tried in the converter's branch order.
//
// Layouts the metadata cannot describe are refused with the reason: an
// average is a reduction, not a view (§4.3); a parameter listed as
// unsupported carries DeepSpeed's own reason.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LAYOUT_LEGACYMETADATA_H
#define UCP_LAYOUT_LEGACYMETADATA_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

#include <map>
#include <set>

namespace ucp {

/// One `parameter_with_sub_params` entry: parameters matching `patterns`
/// hold sub-parameters of `subSizes` along `partitionDim`.
struct SubParamCategory {
  std::vector<std::string> patterns;
  Extents subSizes;
  int64_t partitionDim = 0;
};

/// The category keys of UNIVERSAL_CHECKPOINT_INFO. Patterns match a name as
/// Python's `re.match` does (anchored at the start).
struct LegacyCategories {
  std::vector<std::string> replicated; // tp_replicated_parameter_patterns
  std::vector<std::string> average;    // parameter_to_average_patterns
  std::vector<std::string>
      twoSubParamsCatDim0; // parameter_with_2_sub_params_cat_dim_0
  std::vector<SubParamCategory> subParams; // parameter_with_sub_params
  std::vector<std::string>
      rowParallel; // parameter_with_row_parallelism_patterns
  std::vector<std::string> vocabulary; // vocabulary_parameter_patterns
  /// autotp_unsupported_parameter_patterns: pattern -> DeepSpeed's reason.
  std::map<std::string, std::string> unsupported;
  /// sub_param_shard_widths: parameter name (or pattern) -> widths[sub][rank].
  std::map<std::string, std::vector<Extents>> subParamShardWidths;
  std::optional<int64_t> originalVocabSize;
  /// num_kv_heads and tp_grain_size, for DeepSpeed's split rule.
  std::optional<int64_t> numKvHeads;
  int64_t grainSize = 1;
  /// affine_map: the maps the metadata carries, by parameter name. A
  /// parameter's map wins over every category (DeepSpeed's converter
  /// prefers it too); it holds at the TP degree it was written for only.
  std::map<std::string, ParamMap> affineMaps;
  /// ucp_tp_maps: the TP maps of the checkpoint this one was retargeted
  /// from to TP 1, by TP degree and parameter name, as affine-run recorded
  /// them (DeepSpeed neither writes nor reads the key). A retarget to one of
  /// those degrees takes them: they are where the parameter's shards were,
  /// which the rules may not say without num_kv_heads.
  std::map<int64_t, std::map<std::string, ParamMap>> mapsAtDegree;
  /// ucp_tp_affine: by TP degree, the recorded maps that were that run's
  /// affine_map (its shards say nothing a rule would): a retarget back to
  /// the degree writes them as its affine_map again.
  std::map<int64_t, std::set<std::string>> affineAtDegree;
};

/// AutoTP's per-parameter restore metadata (spec §4.2).
struct AutoTpMeta {
  std::optional<bool> replicated;
  std::optional<int64_t> partitionDim;
  std::optional<Extents> partitionSizes;
  std::optional<Extents> logicalShape;
  std::optional<Extents> subParamSizes;
  std::optional<std::vector<Extents>> subParamShardWidths;

  /// Whether any key is present.
  bool any() const {
    return replicated || partitionDim || partitionSizes || logicalShape ||
           subParamSizes || subParamShardWidths;
  }
};

/// A parameter as the legacy metadata knows it.
struct LegacyParam {
  std::string name;
  /// The shape of the full tensor the converter assembles.
  Extents shape;
  AutoTpMeta meta;
};

/// Returns the canonical map of `param` at tensor-parallel degree `tp`: the
/// map the metadata carries for it, or its categories' layout.
llvm::Expected<ParamMap> lowerLegacyParam(const LegacyParam &param,
                                          const LegacyCategories &categories,
                                          int64_t tp);

/// Returns the canonical map of the parameter `name` whose TP shards have
/// `shapes` (one per TP rank, as a checkpoint records them): the map the
/// metadata carries for it, or else its branch in `categories` fixes how it
/// is split (replicated, along a dimension, by sub-parameters) and the
/// shapes fix the sizes, uneven ones included. A layout that does not give
/// every rank its recorded shape is refused.
llvm::Expected<ParamMap> lowerObservedParam(llvm::StringRef name,
                                            llvm::ArrayRef<Extents> shapes,
                                            const LegacyCategories &categories);

/// What DeepSpeed's converter records beside a parameter's merged tensor in
/// its universal files, decided by the same chain of categories: the keys
/// that precede `param` in each `zero/<name>/<state>.pt`.
struct UniversalMerge {
  /// `cat_dim`: absent for a replicated parameter and sub-parameters.
  std::optional<int64_t> catDim;
  /// `param_n_sub_params` (parameter_with_2_sub_params_cat_dim_0).
  std::optional<int64_t> subParamCount;
  /// `sub_param_shape`: the index of the parameter_with_sub_params entry.
  std::optional<size_t> subParams;
  /// `vocab_tensor`: the parameter matches a vocabulary pattern.
  bool vocabulary = false;
  /// The patterns this parameter uses (for the converter's strict check
  /// that every pattern is used by some parameter).
  std::vector<std::string> usedPatterns;
};

/// Returns how the converter merges `name`, refusing what it would average
/// (a reduction) or cut in a way no layout is (a row-parallel vocabulary).
/// A parameter the metadata carries a map of is merged by the map: no
/// cat_dim or sub-parameter keys, `vocab_tensor` still where a vocabulary
/// pattern matches, and the patterns it matches counted as used.
llvm::Expected<UniversalMerge>
classifyUniversalMerge(llvm::StringRef name,
                       const LegacyCategories &categories);

/// Every pattern of `categories`' merge lists (replicated, average,
/// sub-parameters, row-parallel, vocabulary), once each, in that order.
std::vector<std::string> getMergePatterns(const LegacyCategories &categories);

} // namespace ucp

#endif // UCP_LAYOUT_LEGACYMETADATA_H

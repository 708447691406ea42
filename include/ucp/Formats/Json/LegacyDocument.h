//===- LegacyDocument.h - Legacy checkpoint metadata in JSON ----*- C++ -*-===//
//
// The input of `affine-translate --import-legacy`: today's metadata, with
// the shapes and the degree it does not record itself.
//
//   {"tp_degree": 4,
//    "universal_checkpoint_info": {        // optional
//      "tp_replicated_parameter_patterns": [...],
//      "parameter_to_average_patterns": [...],
//      "parameter_with_2_sub_params_cat_dim_0": [...],
//      "parameter_with_sub_params": [{"patterns": [...], "shape": [..., [a, b,
//      c], ...],
//                                     "partition_dim": d}],
//      "parameter_with_row_parallelism_patterns": [...],
//      "vocabulary_parameter_patterns": [...],
//      "original_vocab_size": V,
//      "sub_param_shard_widths": {"name or pattern": [[...], ...]},
//      "autotp_unsupported_parameter_patterns": {"pattern": "reason"},
//      "num_kv_heads": K, "tp_grain_size": G,
//      "ucp_tp_maps": {"DEGREE": map document, ...},  // affine-run's record
//      "ucp_tp_affine": {"DEGREE": [name, ...]}},     // (of the maps that
//                                                   // were affine_map)
//    "params": {"name": {"shape": [...],
//                        // optional AutoTP restore metadata (spec §4.2):
//                        "replicated": b, "partition_dim": d,
//                        "partition_sizes": [...], "logical_shape": [...],
//                        "sub_param_sizes": [...],
//                        "sub_param_shard_widths": [[...], ...]}}}
//
// In "parameter_with_sub_params", "shape" holds the sub-parameter sizes as a
// list at "partition_dim", as DeepSpeed pickles its SubparamShape.
//
// universal_checkpoint_info may also hold the keys DeepSpeed writes that do
// not shape a TP split (universal_checkpoint_version,
// pipeline_replicated_parameter_patterns). Every other key is refused, so
// that a misspelt category cannot send its parameters down another branch;
// so are an "affine_map" (read it with --import-json) and AutoEP metadata,
// which this lowering does not honour.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_JSON_LEGACYDOCUMENT_H
#define UCP_FORMATS_JSON_LEGACYDOCUMENT_H

#include "ucp/Layout/LegacyMetadata.h"

#include "llvm/Support/JSON.h"

namespace ucp {

/// The parsed input of `--import-legacy`.
struct LegacyDocument {
  int64_t tp = 0;
  LegacyCategories categories;
  /// Sorted by name.
  std::vector<LegacyParam> params;
};

/// Reads a universal_checkpoint_info object (as JSON) into its categories;
/// errors carry the JSON path inside it.
llvm::Expected<LegacyCategories>
parseLegacyCategories(const llvm::json::Value &info);

/// Parses a legacy-metadata document; errors carry the JSON path.
llvm::Expected<LegacyDocument> parseLegacyDocument(llvm::StringRef text);

} // namespace ucp

#endif // UCP_FORMATS_JSON_LEGACYDOCUMENT_H

//===- TensorParallelLayouts.h - DeepSpeed's layouts as maps ----*- C++ -*-===//
//
// One builder per layout DeepSpeed's tensor parallelism produces today
// (deepspeed-facts §1, spec §4-§5). Each returns the canonical map; the
// worked numbers of deepspeed-facts are reproduced by the unit tests.
// Builders with preconditions return an error naming the one that fails;
// every builder expects the shape and world that checkLayoutInputs accepts.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LAYOUT_TENSORPARALLELLAYOUTS_H
#define UCP_LAYOUT_TENSORPARALLELLAYOUTS_H

#include "ucp/Layout/SplitSizes.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// Checks what every builder assumes of a parameter's logical shape and
/// world before any arithmetic on them: `tp` in [1, kMaxWorldSize], extents
/// non-negative and their product within int64, so that no offset or sum a
/// builder computes can overflow. The entry points that take sizes from
/// users (the layout command, legacy metadata) call it first.
llvm::Error checkLayoutInputs(llvm::StringRef name,
                              llvm::ArrayRef<int64_t> shape, int64_t tp);

/// Every rank holds all of F (norms, untouched parameters, a row-parallel
/// bias added after the all-reduce), scaled by `scale`. Like every builder
/// whose blocks some ranks share, it refuses a world whose holders would
/// list more than kMaxMapLocations locations (here tp^2).
llvm::Expected<ParamMap> buildReplicatedLayout(llvm::StringRef name,
                                               llvm::ArrayRef<int64_t> shape,
                                               int64_t tp, double scale = 1.0);

/// A row-parallel bias pre-divided by the world size: replicated with
/// scale 1/tp.
llvm::Expected<ParamMap> buildScaledBiasLayout(llvm::StringRef name,
                                               llvm::ArrayRef<int64_t> shape,
                                               int64_t tp);

/// F split along `dim` into consecutive parts of `sizes` (one per rank;
/// `partition_sizes`, or `getShardSizes`). Column-parallel weights split
/// dim 0, row-parallel weights dim 1.
llvm::Expected<ParamMap> buildSplitLayout(llvm::StringRef name,
                                          llvm::ArrayRef<int64_t> shape,
                                          int64_t dim,
                                          llvm::ArrayRef<int64_t> sizes);

/// Sub-parameters stacked along `dim` (`sub_param_shape` with
/// `sub_param_shard_widths`): sub-parameter i holds `sum(widths[i])`
/// indices; rank r holds `widths[i][r]` of each, sub-parameter after
/// sub-parameter.
llvm::Expected<ParamMap> buildSubParamLayout(llvm::StringRef name,
                                             llvm::ArrayRef<int64_t> shape,
                                             int64_t dim,
                                             llvm::ArrayRef<Extents> widths);

/// Sub-parameters of `subSizes` along `dim`, each split among `tp` ranks by
/// the split rule: GQA q/k/v, gate/up (the legacy two-sub-parameters
/// concatenated on dim 0 is `{half, half}`), glm/qwen thirds, phi3.
llvm::Expected<ParamMap>
buildSplitSubParamLayout(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                         int64_t dim, llvm::ArrayRef<int64_t> subSizes,
                         int64_t tp, const SplitRule &rule = {});

/// The rows of a vocabulary of `vocab` rows padded to a multiple of `tp`
/// (both positive), or nullopt where that count leaves int64.
std::optional<int64_t> getPaddedVocabRows(int64_t vocab, int64_t tp);

/// A legacy-TP vocabulary: `vocab` rows padded to an even split across `tp`
/// ranks, the padding kept in F (spec §8.1 option a) and the real row count
/// recorded as the original vocabulary size.
llvm::Expected<ParamMap> buildPaddedVocabLayout(llvm::StringRef name,
                                                int64_t vocab, int64_t hidden,
                                                int64_t tp);

/// bigcode's fused QKV (MQA): the q rows `[0, qRows)` split by the split
/// rule, and every rank also holding the whole kv block after them.
llvm::Expected<ParamMap> buildBigcodeLayout(llvm::StringRef name, int64_t qRows,
                                            int64_t kvRows, int64_t cols,
                                            int64_t tp,
                                            const SplitRule &rule = {});

/// CodeGen's fused QKV: `mpNum` blocks of [q|k|v] of hidden/mpNum rows each,
/// units of hidden/(mpNum*tp) rows interleaved across ranks. Requires
/// hidden divisible by mpNum * tp.
llvm::Expected<ParamMap> buildCodegenLayout(llvm::StringRef name,
                                            int64_t hidden, int64_t cols,
                                            int64_t tp, int64_t mpNum = 4);

/// Yuan's shared-QK head selection along `dim` (0: value rows, 1: o_proj
/// columns) of F = `shape` with `numHeads` heads. Requires numHeads % tp ==
/// 0, tp <= numHeads / 2 and an even number of heads per rank (otherwise
/// some heads sit on two ranks in a way DeepSpeed does not describe).
llvm::Expected<ParamMap> buildYuanLayout(llvm::StringRef name,
                                         llvm::ArrayRef<int64_t> shape,
                                         int64_t dim, int64_t tp,
                                         int64_t numHeads);

} // namespace ucp

#endif // UCP_LAYOUT_TENSORPARALLELLAYOUTS_H

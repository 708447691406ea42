//===- LayoutBindings.cpp - The layout library's builders -----------------===//
//
// Every builder of the layout library, with its own arguments: each returns
// the canonical map of one layout DeepSpeed produces (tensor-parallel
// splits, fused sub-parameters, padded vocabularies, bigcode, CodeGen,
// Yuan, block selections, AutoEP expert placements), or of the stacks of
// them (a map nested with the DP fragments of each shard).
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "ucp/Layout/BlockLayout.h"
#include "ucp/Layout/ExpertPlacement.h"
#include "ucp/Layout/NestedLayout.h"
#include "ucp/Layout/SplitSizes.h"
#include "ucp/Layout/TensorParallelLayouts.h"

using namespace ucp;
using namespace ucp::python;

static SplitRule getRule(std::optional<int64_t> numKvHeads, int64_t grainSize,
                         const std::string &name) {
  SplitRule rule;
  rule.numKvHeads = numKvHeads;
  rule.grainSize = grainSize;
  rule.name = name;
  return rule;
}

static void bindSplits(py::module_ &m) {
  m.def(
      "shard_sizes",
      [](int64_t total, int64_t tp, std::optional<int64_t> kv, int64_t grain,
         const std::string &name) {
        return toList(getShardSizes(total, tp, getRule(kv, grain, name)));
      },
      py::arg("total"), py::arg("tp"), py::arg("num_kv_heads") = py::none(),
      py::arg("grain_size") = 1, py::arg("name") = "",
      "The rows DeepSpeed's get_shard_size_list gives each of `tp` ranks.");
  m.def(
      "replicated_layout",
      [](const std::string &name, std::vector<int64_t> shape, int64_t tp,
         double scale) {
        return unwrap(buildReplicatedLayout(name, shape, tp, scale));
      },
      py::arg("name"), py::arg("shape"), py::arg("tp"), py::arg("scale") = 1.0,
      "Every rank holds all of F, scaled by `scale`.");
  m.def(
      "scaled_bias_layout",
      [](const std::string &name, std::vector<int64_t> shape, int64_t tp) {
        return unwrap(buildScaledBiasLayout(name, shape, tp));
      },
      py::arg("name"), py::arg("shape"), py::arg("tp"),
      "A row-parallel bias pre-divided by the world size.");
  m.def(
      "split_layout",
      [](const std::string &name, std::vector<int64_t> shape, int64_t dim,
         std::vector<int64_t> sizes) {
        return unwrap(buildSplitLayout(name, shape, dim, sizes));
      },
      py::arg("name"), py::arg("shape"), py::arg("dim"), py::arg("sizes"),
      "F split along `dim` into consecutive parts of `sizes`, one per rank.");
  m.def(
      "sub_param_layout",
      [](const std::string &name, std::vector<int64_t> shape, int64_t dim,
         std::vector<std::vector<int64_t>> widths) {
        std::vector<Extents> perSub;
        for (const std::vector<int64_t> &w : widths)
          perSub.push_back(toExtents(w));
        return unwrap(buildSubParamLayout(name, shape, dim, perSub));
      },
      py::arg("name"), py::arg("shape"), py::arg("dim"), py::arg("widths"),
      "Sub-parameters stacked along `dim`; rank r holds widths[i][r] of "
      "sub-parameter i, sub-parameter after sub-parameter.");
  m.def(
      "split_sub_param_layout",
      [](const std::string &name, std::vector<int64_t> shape, int64_t dim,
         std::vector<int64_t> subSizes, int64_t tp, std::optional<int64_t> kv,
         int64_t grain) {
        return unwrap(buildSplitSubParamLayout(name, shape, dim, subSizes, tp,
                                               getRule(kv, grain, name)));
      },
      py::arg("name"), py::arg("shape"), py::arg("dim"), py::arg("sub_sizes"),
      py::arg("tp"), py::arg("num_kv_heads") = py::none(),
      py::arg("grain_size") = 1,
      "Sub-parameters of `sub_sizes`, each split by DeepSpeed's rule (fused "
      "QKV, gate/up).");
}

static void bindModelLayouts(py::module_ &m) {
  m.def(
      "padded_vocab_layout",
      [](const std::string &name, int64_t vocab, int64_t hidden, int64_t tp) {
        return unwrap(buildPaddedVocabLayout(name, vocab, hidden, tp));
      },
      py::arg("name"), py::arg("vocab"), py::arg("hidden"), py::arg("tp"),
      "A vocabulary padded to an even split, the padding kept in F.");
  m.def(
      "bigcode_layout",
      [](const std::string &name, int64_t qRows, int64_t kvRows, int64_t cols,
         int64_t tp) {
        return unwrap(buildBigcodeLayout(name, qRows, kvRows, cols, tp));
      },
      py::arg("name"), py::arg("q_rows"), py::arg("kv_rows"), py::arg("cols"),
      py::arg("tp"), "bigcode's fused QKV: q split, kv whole on every rank.");
  m.def(
      "codegen_layout",
      [](const std::string &name, int64_t hidden, int64_t cols, int64_t tp,
         int64_t mpNum) {
        return unwrap(buildCodegenLayout(name, hidden, cols, tp, mpNum));
      },
      py::arg("name"), py::arg("hidden"), py::arg("cols"), py::arg("tp"),
      py::arg("mp_num") = 4, "CodeGen's interleaved fused QKV.");
  m.def(
      "yuan_layout",
      [](const std::string &name, std::vector<int64_t> shape, int64_t dim,
         int64_t tp, int64_t heads) {
        return unwrap(buildYuanLayout(name, shape, dim, tp, heads));
      },
      py::arg("name"), py::arg("shape"), py::arg("dim"), py::arg("tp"),
      py::arg("num_heads"), "Yuan's shared-QK head selection.");
  m.def(
      "block_layout",
      [](const std::string &name, std::vector<int64_t> shape, int64_t dim,
         std::vector<std::vector<std::pair<int64_t, int64_t>>> runs,
         double scale) {
        std::vector<std::vector<IndexRun>> byRank;
        for (const auto &rank : runs) {
          std::vector<IndexRun> &mine = byRank.emplace_back();
          for (auto [start, count] : rank)
            mine.push_back({start, count});
        }
        return unwrap(buildBlockLayout(name, shape, dim, byRank, scale));
      },
      py::arg("name"), py::arg("shape"), py::arg("dim"), py::arg("runs"),
      py::arg("scale") = 1.0,
      "Rank r holds F narrowed along `dim` to runs[r], a list of (start, "
      "count), concatenated in order.");
  m.def(
      "expert_layout",
      [](const std::string &name, int64_t numExperts,
         std::vector<std::vector<int64_t>> experts,
         std::vector<int64_t> expertShape) {
        ExpertPlacement placement{numExperts,
                                  static_cast<int64_t>(experts.size()),
                                  std::move(experts)};
        if (llvm::Error error = validateExpertPlacement(placement))
          raise(std::move(error));
        return unwrap(buildExpertLayout(name, placement, expertShape));
      },
      py::arg("name"), py::arg("num_experts"), py::arg("experts"),
      py::arg("expert_shape"),
      "An AutoEP placement of [num_experts, *expert_shape]: experts[r] lists "
      "rank r's global expert ids in local order (uneven, non-contiguous, "
      "replicated and empty placements allowed).");
  m.def(
      "flat_range_layout",
      [](const std::string &name, std::vector<int64_t> shape,
         std::vector<int64_t> sizes) {
        return unwrap(buildFlatRangeLayout(name, shape, sizes));
      },
      py::arg("name"), py::arg("shape"), py::arg("sizes"),
      "A shard of `shape` flattened, rank d holding sizes[d] elements after "
      "those of the ranks before it (ZeRO's fragments).");
  m.def(
      "nest",
      [](const ParamMap &outer, const std::vector<ParamMap> &inner) {
        return unwrap(nestShardMaps(outer, inner));
      },
      py::arg("outer"), py::arg("inner"),
      "`outer` with each rank r's shard cut by inner[r]: grid rank d * "
      "outer.world_size + r holds inner rank d's part of it.");
}

void ucp::python::bindLayouts(py::module_ &m) {
  bindSplits(m);
  bindModelLayouts(m);
}

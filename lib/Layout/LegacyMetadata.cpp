//===- LegacyMetadata.cpp - Today's checkpoint metadata as maps -----------===//

#include "ucp/Layout/LegacyMetadata.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/Regex.h"

using namespace ucp;
using llvm::Expected;

namespace {

llvm::Error refuse(const LegacyParam &param, const llvm::Twine &why) {
  return makeError("parameter '" + param.name + "': " + why.str());
}

/// Returns whether `pattern` matches `name` at its start (Python's
/// `re.match`), or an error if the pattern is not a regex we understand.
Expected<bool> matches(llvm::StringRef pattern, llvm::StringRef name) {
  llvm::Regex regex(("^(" + pattern + ")").str());
  std::string error;
  if (!regex.isValid(error))
    return makeError("pattern '" + pattern.str() +
                     "' is not a regex this reader "
                     "understands: " +
                     error);
  return regex.match(name);
}

/// Returns the first of `patterns` matching `name`, if any.
Expected<std::optional<std::string>>
findMatch(llvm::ArrayRef<std::string> patterns, llvm::StringRef name) {
  for (const std::string &pattern : patterns) {
    Expected<bool> hit = matches(pattern, name);
    if (!hit)
      return hit.takeError();
    if (*hit)
      return std::optional<std::string>(pattern);
  }
  return std::optional<std::string>();
}

/// Lowers AutoTP's per-parameter restore metadata (§4.2).
Expected<ParamMap> lowerAutoTp(const LegacyParam &param,
                               const LegacyCategories &categories, int64_t tp) {
  const AutoTpMeta &meta = param.meta;
  Extents shape = meta.logicalShape.value_or(param.shape);
  if (llvm::Error error = checkLayoutInputs(param.name, shape, tp))
    return std::move(error);
  SplitRule rule{categories.numKvHeads, categories.grainSize, param.name};
  if (meta.replicated.value_or(false))
    return buildReplicatedLayout(param.name, shape, tp);
  int64_t dim = meta.partitionDim.value_or(0);
  if (meta.subParamSizes) {
    if (meta.subParamShardWidths)
      return buildSubParamLayout(param.name, shape, dim,
                                 *meta.subParamShardWidths);
    return buildSplitSubParamLayout(param.name, shape, dim, *meta.subParamSizes,
                                    tp, rule);
  }
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return refuse(param, "partition_dim " + std::to_string(dim) +
                             " is not a dimension of " + formatList(shape));
  // partition_sizes, or the chunk fallback: an even split, whose
  // divisibility assert disappears because uneven extents are expressible.
  Extents sizes =
      meta.partitionSizes.value_or(getShardSizes(shape[dim], tp, rule));
  if (static_cast<int64_t>(sizes.size()) != tp)
    return refuse(param, "partition_sizes " + formatList(sizes) + " name " +
                             std::to_string(sizes.size()) + " ranks, not " +
                             std::to_string(tp));
  return buildSplitLayout(param.name, shape, dim, sizes);
}

/// The branch of the converter's chain (merge_tp_slices) a name takes.
struct Branch {
  enum Kind {
    Replicated,
    Average,
    TwoSubParams,
    SubParams,
    Vocabulary,
    RowParallel,
    ColumnParallel,
  } kind;
  /// For SubParams: the index of the matching category.
  size_t subParams = 0;
};

/// Returns the first branch, in the converter's order, whose patterns
/// match `param`.
Expected<Branch> classify(const LegacyParam &param,
                          const LegacyCategories &categories) {
  // Every pattern list with the branch it leads to, in the chain's order.
  std::vector<std::pair<const std::vector<std::string> *, Branch>> chain = {
      {&categories.replicated, {Branch::Replicated}},
      {&categories.average, {Branch::Average}},
      {&categories.twoSubParamsCatDim0, {Branch::TwoSubParams}},
  };
  for (auto [index, category] : llvm::enumerate(categories.subParams))
    chain.push_back({&category.patterns, {Branch::SubParams, index}});
  chain.push_back({&categories.vocabulary, {Branch::Vocabulary}});
  chain.push_back({&categories.rowParallel, {Branch::RowParallel}});
  for (const auto &[patterns, branch] : chain) {
    Expected<std::optional<std::string>> match =
        findMatch(*patterns, param.name);
    if (!match)
      return match.takeError();
    if (*match)
      return branch;
  }
  return Branch{Branch::ColumnParallel};
}

/// Returns the sub_param_shard_widths recorded for `param`, if any.
Expected<std::optional<std::vector<Extents>>>
findShardWidths(const LegacyParam &param, const LegacyCategories &categories) {
  auto exact = categories.subParamShardWidths.find(param.name);
  if (exact != categories.subParamShardWidths.end())
    return std::optional<std::vector<Extents>>(exact->second);
  for (const auto &[pattern, widths] : categories.subParamShardWidths) {
    Expected<bool> hit = matches(pattern, param.name);
    if (!hit)
      return hit.takeError();
    if (*hit)
      return std::optional<std::vector<Extents>>(widths);
  }
  return std::optional<std::vector<Extents>>();
}

/// Refuses a parameter DeepSpeed lists as unsupported, with its reason.
llvm::Error checkSupported(const LegacyParam &param,
                           const LegacyCategories &categories) {
  for (const auto &[pattern, reason] : categories.unsupported) {
    Expected<bool> hit = matches(pattern, param.name);
    if (!hit)
      return hit.takeError();
    if (*hit)
      return refuse(param, "DeepSpeed marks it unsupported (" + reason +
                               "); describe it with a layout builder or an "
                               "index map instead");
  }
  return llvm::Error::success();
}

} // namespace

Expected<ParamMap> ucp::lowerLegacyParam(const LegacyParam &param,
                                         const LegacyCategories &categories,
                                         int64_t tp) {
  if (std::string error = checkWorldSize(tp, "the tensor-parallel degree");
      !error.empty())
    return refuse(param, error);
  if (auto recorded = categories.affineMaps.find(param.name);
      recorded != categories.affineMaps.end()) {
    const ParamMap &map = recorded->second;
    Extents shape = param.meta.logicalShape.value_or(param.shape);
    if (map.worldSize != tp || map.logicalShape != shape)
      return refuse(param, "the affine_map the metadata carries maps " +
                               formatList(map.logicalShape) + " at TP " +
                               std::to_string(map.worldSize) + ", not " +
                               formatList(shape) + " at TP " +
                               std::to_string(tp));
    return map;
  }
  if (llvm::Error error = checkSupported(param, categories))
    return std::move(error);
  if (param.meta.any())
    return lowerAutoTp(param, categories, tp);
  if (llvm::Error error = checkLayoutInputs(param.name, param.shape, tp))
    return std::move(error);

  Expected<Branch> branch = classify(param, categories);
  if (!branch)
    return branch.takeError();
  SplitRule rule{categories.numKvHeads, categories.grainSize, param.name};
  switch (branch->kind) {
  case Branch::Replicated:
    return buildReplicatedLayout(param.name, param.shape, tp);
  case Branch::Average:
    return refuse(param, "it is averaged across ranks, a reduction and not a "
                         "view, so no map can describe it (spec §4.3)");
  default:
    break;
  }
  if (param.shape.empty())
    return refuse(param, "a scalar can only be replicated");
  switch (branch->kind) {
  case Branch::TwoSubParams:
    if (param.shape[0] % 2 != 0)
      return refuse(param, "two sub-parameters on dim 0 need an even row "
                           "count, got " +
                               std::to_string(param.shape[0]));
    return buildSplitSubParamLayout(param.name, param.shape, 0,
                                    {param.shape[0] / 2, param.shape[0] / 2},
                                    tp, rule);
  case Branch::SubParams: {
    const SubParamCategory &category = categories.subParams[branch->subParams];
    Expected<std::optional<std::vector<Extents>>> widths =
        findShardWidths(param, categories);
    if (!widths)
      return widths.takeError();
    if (*widths)
      return buildSubParamLayout(param.name, param.shape, category.partitionDim,
                                 **widths);
    return buildSplitSubParamLayout(param.name, param.shape,
                                    category.partitionDim, category.subSizes,
                                    tp, rule);
  }
  case Branch::Vocabulary: {
    if (!categories.originalVocabSize)
      return refuse(param, "a vocabulary parameter needs original_vocab_size");
    int64_t vocab = *categories.originalVocabSize;
    std::optional<int64_t> padded;
    if (vocab >= 0)
      padded = getPaddedVocabRows(vocab, tp);
    if (param.shape.size() != 2 ||
        (param.shape[0] != vocab && param.shape[0] != padded))
      return refuse(param, "vocabulary shape " + formatList(param.shape) +
                               " has neither " + std::to_string(vocab) +
                               " nor the padded " +
                               (padded ? std::to_string(*padded)
                                       : std::string("(beyond int64)")) +
                               " rows");
    return buildPaddedVocabLayout(param.name, vocab, param.shape[1], tp);
  }
  default: {
    // cat_dim: 1 for row-parallel weights, else 0.
    int64_t dim = branch->kind == Branch::RowParallel ? 1 : 0;
    if (dim >= static_cast<int64_t>(param.shape.size()))
      return refuse(param, "row-parallel but only " +
                               std::to_string(param.shape.size()) +
                               " dimension(s)");
    return buildSplitLayout(param.name, param.shape, dim,
                            getShardSizes(param.shape[dim], tp, rule));
  }
  }
}

/// Returns `shapes` concatenated along `dim`, or nothing if they differ in
/// another dimension or lack `dim`.
static std::optional<Extents> concatShapes(llvm::ArrayRef<Extents> shapes,
                                           int64_t dim) {
  Extents full = shapes.front();
  if (dim >= static_cast<int64_t>(full.size()))
    return std::nullopt;
  full[dim] = 0;
  for (const Extents &shape : shapes) {
    if (shape.size() != full.size())
      return std::nullopt;
    for (size_t d = 0; d < shape.size(); ++d)
      if (static_cast<int64_t>(d) != dim && shape[d] != full[d])
        return std::nullopt;
    full[dim] += shape[dim];
  }
  return full;
}

/// Builds the map `branch` gives a parameter whose TP shards have
/// `shapes`: the branch picks the dimension, the shapes the sizes.
static Expected<ParamMap> lowerBranch(const LegacyParam &param,
                                      const Branch &branch,
                                      llvm::ArrayRef<Extents> shapes,
                                      const LegacyCategories &categories) {
  int64_t tp = shapes.size();
  auto mismatch = [&](llvm::StringRef layout) {
    std::string list;
    for (const Extents &shape : shapes)
      list += (list.empty() ? "" : ", ") + formatList(shape);
    return refuse(param, "its TP shards are " + list + ", which " + layout +
                             " cannot give");
  };
  if (branch.kind == Branch::Replicated) {
    if (llvm::any_of(shapes, [&](const Extents &s) { return s != shapes[0]; }))
      return mismatch("a replicated layout");
    return buildReplicatedLayout(param.name, shapes[0], tp);
  }
  if (branch.kind == Branch::Average)
    return lowerLegacyParam(param, categories, tp); // Refused there.
  int64_t dim = branch.kind == Branch::RowParallel ? 1
                : branch.kind == Branch::SubParams
                    ? categories.subParams[branch.subParams].partitionDim
                    : 0;
  std::optional<Extents> full = concatShapes(shapes, dim);
  if (!full)
    return mismatch("a split along dimension " + std::to_string(dim));
  LegacyParam whole{param.name, *full, {}};
  if (branch.kind == Branch::SubParams || branch.kind == Branch::TwoSubParams)
    return lowerLegacyParam(whole, categories, tp);
  Extents sizes;
  for (const Extents &shape : shapes)
    sizes.push_back(shape[dim]);
  Expected<ParamMap> map = buildSplitLayout(param.name, *full, dim, sizes);
  // A vocabulary split evenly after padding carries the padding in F.
  if (map && branch.kind == Branch::Vocabulary &&
      categories.originalVocabSize &&
      *categories.originalVocabSize < (*full)[0])
    map->originalVocabSize = categories.originalVocabSize;
  return map;
}

/// The layout of `param`, whose TP shards have `shapes`: the map the
/// metadata carries, or its categories' branch at those shapes.
static Expected<ParamMap>
lowerObservedLayout(const LegacyParam &param, llvm::ArrayRef<Extents> shapes,
                    const LegacyCategories &categories) {
  if (auto recorded = categories.affineMaps.find(param.name);
      recorded != categories.affineMaps.end())
    return recorded->second;
  if (llvm::Error error = checkSupported(param, categories))
    return std::move(error);
  Expected<Branch> branch = classify(param, categories);
  if (!branch)
    return branch.takeError();
  return lowerBranch(param, *branch, shapes, categories);
}

Expected<ParamMap> ucp::lowerObservedParam(llvm::StringRef name,
                                           llvm::ArrayRef<Extents> shapes,
                                           const LegacyCategories &categories) {
  LegacyParam param{name.str(), {}, {}};
  if (shapes.empty())
    return refuse(param, "no tensor-parallel shard");
  Expected<ParamMap> map = lowerObservedLayout(param, shapes, categories);
  if (!map)
    return map.takeError();
  if (map->worldSize != static_cast<int64_t>(shapes.size()))
    return refuse(param, "its layout is over " +
                             std::to_string(map->worldSize) +
                             " ranks, and its shards over " +
                             std::to_string(shapes.size()) + " TP ranks");
  for (auto [rank, shape] : llvm::enumerate(shapes)) {
    auto shard = llvm::find_if(map->shards, [&](const Shard &s) {
      return s.rank == static_cast<int64_t>(rank);
    });
    if (shard == map->shards.end() || shard->shape != shape)
      return refuse(param, "TP rank " + std::to_string(rank) + " holds " +
                               formatList(shape) + ", but its layout gives " +
                               (shard == map->shards.end()
                                    ? std::string("it nothing")
                                    : "it " + formatList(shard->shape)));
  }
  return map;
}

Expected<UniversalMerge>
ucp::classifyUniversalMerge(llvm::StringRef name,
                            const LegacyCategories &categories) {
  LegacyParam param{name.str(), {}, {}};
  UniversalMerge merge;
  bool mapped = categories.affineMaps.count(param.name);
  auto use = [&](llvm::ArrayRef<std::string> patterns) -> Expected<bool> {
    Expected<std::optional<std::string>> match = findMatch(patterns, name);
    if (!match)
      return match.takeError();
    if (*match)
      merge.usedPatterns.push_back(**match);
    return match->has_value();
  };
  // The converter looks the sub-parameters up first (using the pattern
  // whatever the branch), then takes the first list of its chain that
  // matches: replicated, average, two sub-parameters, sub-parameters,
  // row-parallel or else column-parallel; vocabulary is checked on its own.
  std::optional<size_t> subParams;
  for (size_t i = 0; !subParams && i < categories.subParams.size(); ++i) {
    Expected<bool> hit = use(categories.subParams[i].patterns);
    if (!hit)
      return hit.takeError();
    if (*hit)
      subParams = i;
  }
  Expected<bool> replicated = use(categories.replicated);
  if (!replicated)
    return replicated.takeError();
  if (!*replicated) {
    Expected<bool> average = use(categories.average);
    if (!average)
      return average.takeError();
    if (*average && !mapped)
      return refuse(param, "DeepSpeed averages its TP shards, a reduction "
                           "that no layout describes");
    // An averaged parameter with a map is merged by the map: the chain
    // ends there.
    if (!*average) {
      Expected<bool> two = use(categories.twoSubParamsCatDim0);
      if (!two)
        return two.takeError();
      if (*two) {
        merge.catDim = 0;
        merge.subParamCount = 2;
      } else if (subParams) {
        merge.subParams = subParams;
      } else {
        Expected<bool> row = use(categories.rowParallel);
        if (!row)
          return row.takeError();
        merge.catDim = *row ? 1 : 0;
      }
    }
  }
  // A map replaces the categories' merge; the patterns stay used.
  if (mapped) {
    merge.catDim.reset();
    merge.subParamCount.reset();
    merge.subParams.reset();
  }
  Expected<bool> vocabulary = use(categories.vocabulary);
  if (!vocabulary)
    return vocabulary.takeError();
  merge.vocabulary = *vocabulary;
  if (merge.vocabulary && merge.catDim == 1)
    return refuse(param, "it matches both a vocabulary and a row-parallel "
                         "pattern: DeepSpeed would join its shards along "
                         "dimension 1 and then cut rows, which no layout is");
  return merge;
}

std::vector<std::string>
ucp::getMergePatterns(const LegacyCategories &categories) {
  std::vector<std::string> patterns;
  auto add = [&](llvm::ArrayRef<std::string> list) {
    for (const std::string &pattern : list)
      if (!llvm::is_contained(patterns, pattern))
        patterns.push_back(pattern);
  };
  add(categories.replicated);
  add(categories.average);
  add(categories.twoSubParamsCatDim0);
  for (const SubParamCategory &category : categories.subParams)
    add(category.patterns);
  add(categories.rowParallel);
  add(categories.vocabulary);
  return patterns;
}

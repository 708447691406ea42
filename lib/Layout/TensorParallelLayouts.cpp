//===- TensorParallelLayouts.cpp - DeepSpeed's layouts as maps ------------===//
//
// Each builder states which indices of F (along the split dimension) each
// rank holds, in shard order; buildBlockLayout turns that into the map.
//
//===----------------------------------------------------------------------===//

#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Layout/BlockLayout.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace ucp;
using llvm::ArrayRef;
using llvm::Expected;

static llvm::Error refuse(llvm::StringRef name, const llvm::Twine &why) {
  return makeError("layout of '" + name + "': " + why.str());
}

/// The sum of `values`, or nullopt where it leaves int64.
static std::optional<int64_t> sum(ArrayRef<int64_t> values) {
  int64_t total = 0;
  for (int64_t v : values)
    if (llvm::AddOverflow(total, v, total))
      return std::nullopt;
  return total;
}

llvm::Error ucp::checkLayoutInputs(llvm::StringRef name,
                                   ArrayRef<int64_t> shape, int64_t tp) {
  std::string error = checkParamHeader(shape, tp);
  return error.empty() ? llvm::Error::success() : refuse(name, error);
}

/// Checks that `dim` names a dimension of `shape`.
static llvm::Error checkDim(llvm::StringRef name, ArrayRef<int64_t> shape,
                            int64_t dim) {
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return refuse(name, "split dimension " + std::to_string(dim) +
                            " is not a dimension of " + formatList(shape));
  return llvm::Error::success();
}

Expected<ParamMap> ucp::buildReplicatedLayout(llvm::StringRef name,
                                              ArrayRef<int64_t> shape,
                                              int64_t tp, double scale) {
  // Every one of the tp holders lists all tp of them.
  int64_t entries;
  if (llvm::MulOverflow(tp, tp, entries))
    entries = std::numeric_limits<int64_t>::max();
  if (std::string error = checkLocationCount(entries); !error.empty())
    return refuse(name,
                  "replicated on " + std::to_string(tp) + " ranks, " + error);
  ParamMap map;
  map.name = name.str();
  map.logicalShape.assign(shape.begin(), shape.end());
  map.worldSize = tp;
  Piece piece;
  piece.shape = map.logicalShape;
  piece.source = {0, getRowMajorStrides(shape)};
  piece.dest = piece.source;
  for (int64_t r = 0; r < tp; ++r)
    piece.locations.push_back(r);
  piece.scale = scale;
  bool empty = getNumElements(shape).value_or(0) == 0;
  for (int64_t r = 0; r < tp; ++r) {
    Shard &shard = map.shards.emplace_back();
    shard.rank = r;
    shard.shape = map.logicalShape;
    if (!empty)
      shard.pieces.push_back(piece);
  }
  return map;
}

Expected<ParamMap> ucp::buildScaledBiasLayout(llvm::StringRef name,
                                              ArrayRef<int64_t> shape,
                                              int64_t tp) {
  return buildReplicatedLayout(name, shape, tp, 1.0 / tp);
}

Expected<ParamMap> ucp::buildSplitLayout(llvm::StringRef name,
                                         ArrayRef<int64_t> shape, int64_t dim,
                                         ArrayRef<int64_t> sizes) {
  if (llvm::Error error = checkLayoutInputs(name, shape, sizes.size()))
    return std::move(error);
  if (llvm::Error error = checkDim(name, shape, dim))
    return std::move(error);
  if (sum(sizes) != std::optional(shape[dim]) ||
      llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
    return refuse(name, "partition sizes " + formatList(sizes) +
                            " do not account for the " +
                            std::to_string(shape[dim]) +
                            " indices of dimension " + std::to_string(dim));
  return buildBlockLayout(name, shape, dim, getContiguousRuns(sizes));
}

Expected<ParamMap> ucp::buildSubParamLayout(llvm::StringRef name,
                                            ArrayRef<int64_t> shape,
                                            int64_t dim,
                                            ArrayRef<Extents> widths) {
  if (widths.empty())
    return refuse(name, "no sub-parameters");
  size_t tp = widths.front().size();
  if (llvm::Error error = checkLayoutInputs(name, shape, tp))
    return std::move(error);
  if (llvm::Error error = checkDim(name, shape, dim))
    return std::move(error);
  Extents all;
  for (const Extents &sub : widths) {
    if (sub.size() != tp)
      return refuse(name, "sub-parameter widths " + formatList(sub) +
                              " do not name " + std::to_string(tp) + " ranks");
    all.append(sub.begin(), sub.end());
  }
  for (int64_t width : all)
    if (width < 0)
      return refuse(name, "sub-parameter width " + std::to_string(width) +
                              " is negative");
  std::optional<int64_t> total = sum(all);
  if (total != std::optional(shape[dim]))
    return refuse(name, "sub-parameter widths add up to " +
                            (total ? std::to_string(*total)
                                   : std::string("more than int64 holds")) +
                            " but dimension " + std::to_string(dim) + " has " +
                            std::to_string(shape[dim]));
  std::vector<std::vector<IndexRun>> runs(tp);
  int64_t start = 0;
  for (const Extents &sub : widths) {
    for (size_t r = 0; r < tp; ++r) {
      runs[r].push_back({start, sub[r]});
      start += sub[r];
    }
  }
  return buildBlockLayout(name, shape, dim, runs);
}

Expected<ParamMap>
ucp::buildSplitSubParamLayout(llvm::StringRef name, ArrayRef<int64_t> shape,
                              int64_t dim, ArrayRef<int64_t> subSizes,
                              int64_t tp, const SplitRule &rule) {
  std::vector<Extents> widths;
  for (int64_t size : subSizes)
    widths.push_back(getShardSizes(size, tp, rule));
  return buildSubParamLayout(name, shape, dim, widths);
}

std::optional<int64_t> ucp::getPaddedVocabRows(int64_t vocab, int64_t tp) {
  return llvm::checkedMul(vocab / tp + (vocab % tp != 0), tp);
}

Expected<ParamMap> ucp::buildPaddedVocabLayout(llvm::StringRef name,
                                               int64_t vocab, int64_t hidden,
                                               int64_t tp) {
  int64_t rows = *getPaddedVocabRows(vocab, tp);
  Expected<ParamMap> map = buildBlockLayout(
      name, {rows, hidden}, 0, getContiguousRuns(Extents(tp, rows / tp)));
  if (map)
    map->originalVocabSize = vocab;
  return map;
}

Expected<ParamMap> ucp::buildBigcodeLayout(llvm::StringRef name, int64_t qRows,
                                           int64_t kvRows, int64_t cols,
                                           int64_t tp, const SplitRule &rule) {
  std::vector<std::vector<IndexRun>> runs =
      getContiguousRuns(getShardSizes(qRows, tp, rule));
  for (std::vector<IndexRun> &rankRuns : runs)
    rankRuns.push_back({qRows, kvRows});
  return buildBlockLayout(name, {qRows + kvRows, cols}, 0, runs);
}

Expected<ParamMap> ucp::buildCodegenLayout(llvm::StringRef name, int64_t hidden,
                                           int64_t cols, int64_t tp,
                                           int64_t mpNum) {
  // hidden / mp_num divisible by tp: the same as hidden divisible by
  // mp_num * tp, without forming a product that may overflow.
  if (mpNum <= 0 || tp <= 0 || hidden % mpNum != 0 || hidden / mpNum % tp != 0)
    return refuse(name,
                  "codegen needs the hidden size " + std::to_string(hidden) +
                      " divisible by mp_num * tp = " + std::to_string(mpNum) +
                      " * " + std::to_string(tp));
  int64_t rows = 0;
  if (llvm::MulOverflow(int64_t(3), hidden, rows))
    return refuse(name, "3 * hidden " + std::to_string(hidden) +
                            " rows are more than int64 holds");
  if (llvm::Error error = checkLayoutInputs(name, {rows, cols}, tp))
    return std::move(error);
  // F is mp_num blocks of [q|k|v]; unit n = k*tp + j takes, from block k,
  // rows j*u.. of each of q, k and v. Rank r holds units mp_num*r onwards.
  int64_t block = 3 * hidden / mpNum, part = hidden / mpNum;
  int64_t unit = hidden / (mpNum * tp);
  std::vector<std::vector<IndexRun>> runs(tp);
  for (int64_t n = 0; n < mpNum * tp; ++n) {
    int64_t k = n / tp, j = n % tp;
    for (int64_t offset : {int64_t(0), part, 2 * part})
      runs[n / mpNum].push_back({k * block + offset + j * unit, unit});
  }
  return buildBlockLayout(name, {rows, cols}, 0, runs);
}

Expected<ParamMap> ucp::buildYuanLayout(llvm::StringRef name,
                                        ArrayRef<int64_t> shape, int64_t dim,
                                        int64_t tp, int64_t numHeads) {
  if (llvm::Error error = checkLayoutInputs(name, shape, tp))
    return std::move(error);
  if (llvm::Error error = checkDim(name, shape, dim))
    return std::move(error);
  if (numHeads <= 0 || tp <= 0 || numHeads % tp != 0 || tp > numHeads / 2 ||
      shape[dim] % numHeads != 0)
    return refuse(name, "Yuan needs num_heads " + std::to_string(numHeads) +
                            " divisible by tp " + std::to_string(tp) +
                            ", tp <= num_heads / 2 and dimension " +
                            std::to_string(dim) + " divisible by num_heads");
  int64_t perRank = numHeads / tp, headSize = shape[dim] / numHeads;
  if (perRank % 2 != 0)
    return refuse(name, "with " + std::to_string(perRank) +
                            " heads per rank Yuan places some heads on two "
                            "ranks, which DeepSpeed does not describe");
  // Rank r takes heads (r*perRank + i)/2 for even i, then the same heads
  // shifted by numHeads/2: two runs of perRank/2 heads.
  std::vector<std::vector<IndexRun>> runs(tp);
  for (int64_t r = 0; r < tp; ++r) {
    int64_t firstHead = r * perRank / 2;
    for (int64_t shift : {int64_t(0), numHeads / 2})
      runs[r].push_back(
          {(firstHead + shift) * headSize, perRank / 2 * headSize});
  }
  return buildBlockLayout(name, shape, dim, runs);
}

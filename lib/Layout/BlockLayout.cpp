//===- BlockLayout.cpp - Layouts that narrow F along one dimension --------===//

#include "ucp/Layout/BlockLayout.h"
#include "ucp/Canonical/Canonicalize.h"

#include "llvm/Support/ErrorHandling.h"

using namespace ucp;
using llvm::ArrayRef;

std::vector<std::vector<IndexRun>>
ucp::getContiguousRuns(ArrayRef<int64_t> sizes, int64_t start) {
  std::vector<std::vector<IndexRun>> runs;
  for (int64_t size : sizes) {
    runs.push_back({{start, size}});
    start += size;
  }
  return runs;
}

ParamMap ucp::buildBlockLayout(llvm::StringRef name, ArrayRef<int64_t> shape,
                               int64_t dim,
                               ArrayRef<std::vector<IndexRun>> runsByRank,
                               double scale) {
  // Cut every run where any run begins or ends, so that each cut piece is
  // held by one fixed set of ranks.
  std::vector<int64_t> cuts;
  for (const std::vector<IndexRun> &runs : runsByRank)
    for (const IndexRun &run : runs) {
      cuts.push_back(run.start);
      cuts.push_back(run.start + run.count);
    }
  llvm::sort(cuts);
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  auto holdersOf = [&](int64_t index) {
    llvm::SmallVector<int64_t, 4> holders;
    for (auto [rank, runs] : llvm::enumerate(runsByRank))
      if (llvm::any_of(runs, [&](const IndexRun &run) {
            return run.start <= index && index < run.start + run.count;
          }))
        holders.push_back(rank);
    return holders;
  };

  ParamMap map;
  map.name = name.str();
  map.logicalShape.assign(shape.begin(), shape.end());
  map.worldSize = runsByRank.size();
  Extents fStrides = getRowMajorStrides(shape);
  for (auto [rank, runs] : llvm::enumerate(runsByRank)) {
    Shard &shard = map.shards.emplace_back();
    shard.rank = rank;
    shard.shape = map.logicalShape;
    shard.shape[dim] = 0;
    for (const IndexRun &run : runs)
      shard.shape[dim] += run.count;
    Extents shardStrides = getRowMajorStrides(shard.shape);
    int64_t at = 0;
    for (const IndexRun &run : runs) {
      auto first = llvm::upper_bound(cuts, run.start);
      for (int64_t from = run.start; from < run.start + run.count;) {
        int64_t to = std::min(*first++, run.start + run.count);
        Piece &piece = shard.pieces.emplace_back();
        piece.shape = map.logicalShape;
        piece.shape[dim] = to - from;
        piece.source = {from * fStrides[dim], fStrides};
        piece.dest = {at * shardStrides[dim], shardStrides};
        piece.locations = holdersOf(from);
        piece.scale = scale;
        at += to - from;
        from = to;
      }
    }
  }
  llvm::Expected<ParamMap> canonical = canonicalizeParamMap(map);
  if (!canonical)
    llvm::report_fatal_error(canonical.takeError());
  return std::move(*canonical);
}

//===- BlockLayout.cpp - Layouts that narrow F along one dimension --------===//

#include "ucp/Layout/BlockLayout.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

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

/// Returns, for each segment between consecutive `cuts`, the ranks whose
/// runs hold it (ascending), or an error if listing them on every holder
/// would exceed kMaxMapLocations.
static llvm::Expected<std::vector<llvm::SmallVector<int64_t, 4>>>
findHolders(llvm::StringRef name, ArrayRef<int64_t> cuts,
            ArrayRef<std::vector<IndexRun>> runsByRank) {
  size_t segments = cuts.empty() ? 0 : cuts.size() - 1;
  auto segmentOf = [&](int64_t index) {
    return static_cast<size_t>(llvm::lower_bound(cuts, index) - cuts.begin());
  };
  // How many runs cover each segment, by a difference array: counted before
  // anything is listed, so that a huge world is refused, not allocated.
  std::vector<int64_t> coverage(segments + 1, 0);
  for (const std::vector<IndexRun> &runs : runsByRank)
    for (const IndexRun &run : runs)
      if (run.count > 0) {
        ++coverage[segmentOf(run.start)];
        --coverage[segmentOf(run.start + run.count)];
      }
  int64_t entries = 0, covering = 0;
  for (size_t k = 0; k < segments; ++k) {
    covering += coverage[k];
    // Each of the `covering` holders lists `covering` locations.
    int64_t listed;
    if (llvm::MulOverflow(covering, covering, listed) ||
        llvm::AddOverflow(entries, listed, entries)) {
      entries = std::numeric_limits<int64_t>::max();
      break;
    }
  }
  if (std::string error = checkLocationCount(entries); !error.empty())
    return makeError("parameter '" + name + "': " + error);
  std::vector<llvm::SmallVector<int64_t, 4>> holders(segments);
  for (auto [rank, runs] : llvm::enumerate(runsByRank))
    for (const IndexRun &run : runs)
      for (size_t k = segmentOf(run.start),
                  end = segmentOf(run.start + run.count);
           k < end; ++k)
        holders[k].push_back(rank);
  return holders;
}

llvm::Expected<ParamMap>
ucp::buildBlockLayout(llvm::StringRef name, ArrayRef<int64_t> shape,
                      int64_t dim, ArrayRef<std::vector<IndexRun>> runsByRank,
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
  llvm::Expected<std::vector<llvm::SmallVector<int64_t, 4>>> holders =
      findHolders(name, cuts, runsByRank);
  if (!holders)
    return holders.takeError();

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
        int64_t to = std::min(*first, run.start + run.count);
        Piece &piece = shard.pieces.emplace_back();
        piece.shape = map.logicalShape;
        piece.shape[dim] = to - from;
        piece.source = {from * fStrides[dim], fStrides};
        piece.dest = {at * shardStrides[dim], shardStrides};
        piece.locations = (*holders)[first - cuts.begin() - 1];
        piece.scale = scale;
        ++first;
        at += to - from;
        from = to;
      }
    }
  }
  return canonicalizeParamMap(map);
}

//===- IndexMapDerivation.cpp - Canonical maps from index maps ------------===//

#include "ucp/Canonical/IndexMapDerivation.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/DenseMap.h"

#include <map>
#include <unordered_map>

using namespace ucp;
using llvm::ArrayRef;

namespace {

/// The sets of ranks holding each element of F, interned: ranks are added
/// in ascending order, so a set is the set it grew from plus one rank, and
/// each set is stored as that step (a trie). Storing every set whole would
/// cost the square of the holders of an element held by many ranks (all
/// 2^20 of a huge world: 2^39 entries); the trie costs one node per set.
/// Set 0 is the empty set.
class HolderSets {
public:
  /// For `entries` index entries into an F of `elements`. A table with a
  /// slot per element of F is the fast way, but only when F has no more
  /// elements than the index has entries (as when the index covers F);
  /// otherwise the holders are kept per element held, so that memory stays
  /// in proportion to the index, never to F.
  HolderSets(int64_t elements, int64_t entries) : nodes(1) {
    if (elements <= entries)
      setOfElement.assign(elements, 0);
    else
      sparse = true;
  }

  void add(int64_t element, int64_t rank) {
    uint32_t &set = sparse ? setOfHeldElement[element] : setOfElement[element];
    if (set != 0 && nodes[set].rank == rank)
      return; // The same rank holds the element twice.
    auto [it, inserted] = steps.try_emplace({set, rank}, nodes.size());
    if (inserted)
      nodes.push_back({set, rank, nodes[set].size + 1});
    set = it->second;
  }

  uint32_t getSet(int64_t element) const {
    if (!sparse)
      return setOfElement[element];
    auto it = setOfHeldElement.find(element);
    return it == setOfHeldElement.end() ? 0 : it->second;
  }
  /// The number of ranks in `set`.
  int64_t getSize(uint32_t set) const { return nodes[set].size; }
  /// The ranks of `set`, ascending.
  std::vector<int64_t> getRanks(uint32_t set) const {
    std::vector<int64_t> ranks(nodes[set].size);
    for (size_t i = ranks.size(); i-- > 0; set = nodes[set].parent)
      ranks[i] = nodes[set].rank;
    return ranks;
  }

private:
  struct Node {
    uint32_t parent;
    int64_t rank;
    int64_t size;
  };
  bool sparse = false;
  std::vector<uint32_t> setOfElement;
  // Not a DenseMap: it reserves two keys that are elements of a large F.
  std::unordered_map<int64_t, uint32_t> setOfHeldElement;
  std::vector<Node> nodes;
  llvm::DenseMap<std::pair<uint32_t, int64_t>, uint32_t> steps;
};

/// A run of consecutive F offsets of one shard with one holder set.
struct HolderRun {
  size_t start, end;
  uint32_t set;
};

llvm::Error refuse(const IndexMap &indexMap, int64_t rank,
                   const llvm::Twine &what) {
  return makeError("parameter '" + indexMap.name + "': rank " +
                   std::to_string(rank) + ": " + what.str());
}

} // namespace

llvm::Expected<ParamMap> ucp::deriveParamMap(const IndexMap &indexMap) {
  std::string header =
      checkParamHeader(indexMap.logicalShape, indexMap.worldSize);
  if (!header.empty())
    return makeError("parameter '" + indexMap.name + "': " + header);
  int64_t elements = *getNumElements(indexMap.logicalShape);

  // Refuse anything that is not a view, then learn who holds what.
  int64_t entries = 0;
  for (const IndexShard &shard : indexMap.shards)
    entries += shard.index.size();
  HolderSets holders(elements, entries);
  for (const IndexShard &shard : indexMap.shards) {
    std::string error =
        checkShardHeader(shard.rank, shard.shape, indexMap.worldSize);
    if (!error.empty())
      return refuse(indexMap, shard.rank, error);
    int64_t shardElements = *getNumElements(shard.shape);
    if (static_cast<int64_t>(shard.index.size()) != shardElements)
      return refuse(indexMap, shard.rank,
                    "shard shape " + formatList(shard.shape) + " has " +
                        std::to_string(shardElements) +
                        " elements but its index lists " +
                        std::to_string(shard.index.size()));
    for (auto [k, offset] : llvm::enumerate(shard.index)) {
      if (offset < 0 || offset >= elements)
        return refuse(
            indexMap, shard.rank,
            "shard element " + formatList(unravelIndex(k, shard.shape)) +
                " comes from offset " + std::to_string(offset) +
                ", outside F of " + std::to_string(elements) + " elements");
      holders.add(offset, shard.rank);
    }
  }

  // Runs of consecutive offsets with one holder set, cut at the end of
  // every row of F (its innermost dimension), so that folding alone decides
  // how rows group: a run that happens to continue into the next row in
  // shard order must not pre-empt a better grouping (codegen with
  // single-row units).
  int64_t rowLength = indexMap.logicalShape.empty()
                          ? 1
                          : std::max<int64_t>(indexMap.logicalShape.back(), 1);
  std::vector<std::vector<HolderRun>> runsOfShard;
  int64_t locations = 0;
  for (const IndexShard &indexShard : indexMap.shards) {
    std::vector<HolderRun> &runs = runsOfShard.emplace_back();
    ArrayRef<int64_t> index = indexShard.index;
    for (size_t start = 0; start < index.size();) {
      uint32_t set = holders.getSet(index[start]);
      size_t end = start + 1;
      while (end < index.size() && index[end] == index[end - 1] + 1 &&
             index[end] % rowLength != 0 && holders.getSet(index[end]) == set)
        ++end;
      runs.push_back({start, end, set});
      // Each run becomes at least one piece listing its holders.
      locations =
          std::min(locations + holders.getSize(set), kMaxMapLocations + 1);
      start = end;
    }
  }
  if (std::string error = checkLocationCount(locations); !error.empty())
    return makeError("parameter '" + indexMap.name + "': " + error);

  ParamMap map;
  map.name = indexMap.name;
  map.logicalShape = indexMap.logicalShape;
  map.worldSize = indexMap.worldSize;
  for (auto [indexShard, runs] :
       llvm::zip_equal(indexMap.shards, runsOfShard)) {
    Shard &shard = map.shards.emplace_back();
    shard.rank = indexShard.rank;
    shard.shape = indexShard.shape;
    LabelTable labels;
    std::map<uint32_t, unsigned> labelOfSet;
    std::vector<FoldBlock> blocks;
    for (const HolderRun &run : runs) {
      int64_t length = run.end - run.start;
      llvm::SmallVector<MappedBox> mapped;
      decomposeMappedView({length}, {indexShard.index[run.start], {1}},
                          {static_cast<int64_t>(run.start), {1}},
                          map.logicalShape, Repeats::Collapse, mapped);
      auto [it, inserted] = labelOfSet.try_emplace(run.set, 0);
      if (inserted)
        it->second = labels.intern(holders.getRanks(run.set), 1.0);
      for (MappedBox &box : mapped)
        blocks.push_back({std::move(box), it->second});
    }
    shard.pieces =
        buildCanonicalPieces(std::move(blocks), labels, map.logicalShape);
  }
  return map;
}

IndexMap ucp::getIndexMap(const ParamMap &map) {
  IndexMap indexMap;
  indexMap.name = map.name;
  indexMap.logicalShape = map.logicalShape;
  indexMap.worldSize = map.worldSize;
  for (const Shard &shard : map.shards) {
    IndexShard &indexShard = indexMap.shards.emplace_back();
    indexShard.rank = shard.rank;
    indexShard.shape = shard.shape;
    indexShard.index.assign(getNumElements(shard.shape).value_or(0), -1);
    for (const Piece &piece : shard.pieces)
      forEachElement(
          piece.shape, {piece.source, piece.dest},
          [&](ArrayRef<int64_t> at) { indexShard.index[at[1]] = at[0]; });
  }
  return indexMap;
}

//===- RandomMaps.cpp - Random parameter maps for property tests ----------===//

#include "RandomMaps.h"
#include "ucp/Map/Indexing.h"

#include <algorithm>
#include <numeric>

using namespace ucp;
using namespace ucp::testing;

namespace {

int64_t uniform(std::mt19937_64 &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// A block of F: a box, the ranks holding it and their scale.
struct Block {
  Extents lo, extents;
  llvm::SmallVector<int64_t, 4> holders;
  double scale;
};

/// Splits `total` into `parts` random sizes (some possibly zero).
Extents randomSizes(std::mt19937_64 &rng, int64_t total, int64_t parts) {
  Extents cuts = {0, total};
  for (int64_t i = 1; i < parts; ++i)
    cuts.push_back(uniform(rng, 0, total));
  llvm::sort(cuts);
  Extents sizes;
  for (size_t i = 0; i + 1 < cuts.size(); ++i)
    sizes.push_back(cuts[i + 1] - cuts[i]);
  return sizes;
}

/// Returns the piece placing `block` at `destOffset` of a shard with
/// row-major `destStrides` (one per block dimension).
Piece makePiece(const Block &block, llvm::ArrayRef<int64_t> fShape,
                int64_t destOffset, llvm::ArrayRef<int64_t> destStrides) {
  Extents fStrides = getRowMajorStrides(fShape);
  Piece piece;
  piece.shape = block.extents;
  piece.source.offset = 0;
  for (size_t d = 0; d < fShape.size(); ++d)
    piece.source.offset += block.lo[d] * fStrides[d];
  piece.source.strides = fStrides;
  piece.dest.offset = destOffset;
  piece.dest.strides.assign(destStrides.begin(), destStrides.end());
  piece.locations = block.holders;
  piece.scale = block.scale;
  return piece;
}

/// Rewrites `piece` into an equivalent one with different dimensions:
/// permuted, padded with extent-1 dimensions, or with contiguous
/// dimensions merged on both sides.
void rewriteDims(std::mt19937_64 &rng, Piece &piece) {
  size_t rank = piece.shape.size();
  switch (uniform(rng, 0, 3)) {
  case 0: { // Permute.
    llvm::SmallVector<size_t, 4> order(rank);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    Piece out = piece;
    for (size_t i = 0; i < rank; ++i) {
      out.shape[i] = piece.shape[order[i]];
      out.source.strides[i] = piece.source.strides[order[i]];
      out.dest.strides[i] = piece.dest.strides[order[i]];
    }
    piece = out;
    break;
  }
  case 1: { // Insert an extent-1 dimension with arbitrary strides.
    size_t at = uniform(rng, 0, rank);
    piece.shape.insert(piece.shape.begin() + at, 1);
    piece.source.strides.insert(piece.source.strides.begin() + at,
                                uniform(rng, 0, 9));
    piece.dest.strides.insert(piece.dest.strides.begin() + at,
                              uniform(rng, 0, 9));
    break;
  }
  case 2: { // Merge the innermost pair of dimensions when both sides allow.
    if (rank < 2)
      break;
    size_t i = rank - 2;
    if (piece.source.strides[i] !=
            piece.shape[i + 1] * piece.source.strides[i + 1] ||
        piece.dest.strides[i] != piece.shape[i + 1] * piece.dest.strides[i + 1])
      break;
    piece.shape[i] *= piece.shape[i + 1];
    piece.source.strides[i] = piece.source.strides[i + 1];
    piece.dest.strides[i] = piece.dest.strides[i + 1];
    piece.shape.pop_back();
    piece.source.strides.pop_back();
    piece.dest.strides.pop_back();
    break;
  }
  default:
    break;
  }
}

} // namespace

ParamMap ucp::testing::makeRandomMap(std::mt19937_64 &rng, int maxRank,
                                     int64_t maxExtent, int64_t maxWorld) {
  Extents shape;
  for (int64_t d = 0, rank = uniform(rng, 1, maxRank); d < rank; ++d)
    shape.push_back(uniform(rng, 1, maxExtent));
  return makeRandomMapOf(rng, shape, maxWorld);
}

ParamMap ucp::testing::makeRandomMapOf(std::mt19937_64 &rng,
                                       llvm::ArrayRef<int64_t> logicalShape,
                                       int64_t maxWorld,
                                       llvm::ArrayRef<double> scales) {
  ParamMap map;
  map.name = "random.weight";
  map.logicalShape.assign(logicalShape.begin(), logicalShape.end());
  int64_t rank = logicalShape.size();
  map.worldSize = uniform(rng, 1, maxWorld);

  // A grid: one or two axes cut into random (possibly empty) segments.
  llvm::SmallVector<Extents, 4> cutsOfDim(rank);
  for (int64_t d = 0; d < rank; ++d)
    cutsOfDim[d] = {0, map.logicalShape[d]};
  int64_t splitAxes = std::min<int64_t>(rank, uniform(rng, 1, 2));
  for (int64_t k = 0; k < splitAxes; ++k) {
    int64_t d = uniform(rng, 0, rank - 1);
    Extents sizes = randomSizes(rng, map.logicalShape[d], uniform(rng, 1, 4));
    cutsOfDim[d] = {0};
    for (int64_t size : sizes)
      cutsOfDim[d].push_back(cutsOfDim[d].back() + size);
  }

  std::vector<Block> blocks;
  Extents cell(rank, 0);
  while (true) {
    Block block;
    bool empty = false;
    for (int64_t d = 0; d < rank; ++d) {
      block.lo.push_back(cutsOfDim[d][cell[d]]);
      block.extents.push_back(cutsOfDim[d][cell[d] + 1] -
                              cutsOfDim[d][cell[d]]);
      empty |= block.extents.back() == 0;
    }
    if (!empty) {
      // Holders: usually one rank, sometimes several or all.
      int64_t copies =
          uniform(rng, 0, 3) == 0 ? uniform(rng, 1, map.worldSize) : 1;
      Extents ranks(map.worldSize);
      std::iota(ranks.begin(), ranks.end(), 0);
      std::shuffle(ranks.begin(), ranks.end(), rng);
      block.holders.assign(ranks.begin(), ranks.begin() + copies);
      llvm::sort(block.holders);
      block.scale = scales[uniform(rng, 0, scales.size() - 1)];
      blocks.push_back(block);
    }
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      if (++cell[d] + 1 < static_cast<int64_t>(cutsOfDim[d].size()))
        break;
      cell[d] = 0;
    }
    if (d < 0)
      break;
  }

  // Each rank packs its blocks, in random order, into its shard.
  for (int64_t r = 0; r < map.worldSize; ++r) {
    std::vector<const Block *> mine;
    for (const Block &block : blocks)
      if (llvm::is_contained(block.holders, r))
        mine.push_back(&block);
    if (mine.empty() && uniform(rng, 0, 1))
      continue; // A rank holding nothing may have no shard at all.
    std::shuffle(mine.begin(), mine.end(), rng);
    Shard shard;
    shard.rank = r;

    // Stacked along an axis when the blocks agree on every other extent
    // (a column split interleaves its pieces row by row), else flat; a
    // scalar's shard is flat.
    int64_t stackAxis = rank > 0 ? uniform(rng, 0, rank - 1) : 0;
    bool stackable = rank > 0 && !mine.empty();
    for (const Block *block : mine)
      for (int64_t d = 0; d < rank; ++d)
        stackable &=
            d == stackAxis || block->extents[d] == mine.front()->extents[d];
    if (stackable && uniform(rng, 0, 1)) {
      shard.shape = mine.front()->extents;
      shard.shape[stackAxis] = 0;
      for (const Block *block : mine)
        shard.shape[stackAxis] += block->extents[stackAxis];
      Extents strides = getRowMajorStrides(shard.shape);
      int64_t at = 0;
      for (const Block *block : mine) {
        shard.pieces.push_back(makePiece(*block, map.logicalShape,
                                         at * strides[stackAxis], strides));
        at += block->extents[stackAxis];
      }
    } else {
      int64_t total = 0;
      for (const Block *block : mine)
        total += *getNumElements(block->extents);
      shard.shape = {total};
      int64_t at = 0;
      for (const Block *block : mine) {
        shard.pieces.push_back(makePiece(*block, map.logicalShape, at,
                                         getRowMajorStrides(block->extents)));
        at += *getNumElements(block->extents);
      }
    }
    for (Piece &piece : shard.pieces)
      rewriteDims(rng, piece);
    map.shards.push_back(std::move(shard));
  }
  return map;
}

Extents ucp::testing::splitEvenly(int64_t total, int64_t parts) {
  Extents sizes;
  for (int64_t r = 0; r < parts; ++r)
    sizes.push_back(total / parts + (r < total % parts));
  return sizes;
}

ParamMap ucp::testing::makeSplitMap(llvm::StringRef name,
                                    llvm::ArrayRef<int64_t> shape, int64_t dim,
                                    llvm::ArrayRef<int64_t> sizes) {
  ParamMap map;
  map.name = name.str();
  map.logicalShape.assign(shape.begin(), shape.end());
  map.worldSize = sizes.size();
  Extents fStrides = getRowMajorStrides(shape);
  int64_t start = 0;
  for (auto [r, size] : llvm::enumerate(sizes)) {
    Shard &shard = map.shards.emplace_back();
    shard.rank = r;
    shard.shape.assign(shape.begin(), shape.end());
    shard.shape[dim] = size;
    if (size > 0) {
      Piece piece;
      piece.shape = shard.shape;
      piece.source = {start * fStrides[dim], fStrides};
      piece.dest = {0, getRowMajorStrides(shard.shape)};
      piece.locations = {static_cast<int64_t>(r)};
      shard.pieces.push_back(std::move(piece));
    }
    start += size;
  }
  return map;
}

ParamMap ucp::testing::makeReplicatedMap(llvm::StringRef name,
                                         llvm::ArrayRef<int64_t> shape,
                                         int64_t world, double scale) {
  ParamMap map;
  map.name = name.str();
  map.logicalShape.assign(shape.begin(), shape.end());
  map.worldSize = world;
  Piece piece;
  piece.shape.assign(shape.begin(), shape.end());
  piece.source = {0, getRowMajorStrides(shape)};
  piece.dest = piece.source;
  for (int64_t r = 0; r < world; ++r)
    piece.locations.push_back(r);
  piece.scale = scale;
  for (int64_t r = 0; r < world; ++r)
    map.shards.push_back({r, piece.shape, {piece}});
  return map;
}

ParamMap ucp::testing::makeScatteredMap(llvm::StringRef name,
                                        llvm::ArrayRef<int64_t> shape,
                                        int64_t world, std::mt19937_64 &rng) {
  ParamMap map;
  map.name = name.str();
  map.logicalShape.assign(shape.begin(), shape.end());
  map.worldSize = world;
  int64_t elements = getNumElements(shape).value_or(0);
  std::vector<std::vector<int64_t>> held(world);
  std::uniform_int_distribution<int64_t> pick(0, world - 1);
  for (int64_t e = 0; e < elements; ++e)
    held[pick(rng)].push_back(e);
  Extents ones(shape.size(), 1);
  for (int64_t r = 0; r < world; ++r) {
    std::shuffle(held[r].begin(), held[r].end(), rng);
    Shard &shard = map.shards.emplace_back();
    shard.rank = r;
    shard.shape = {static_cast<int64_t>(held[r].size())};
    shard.pieces.reserve(held[r].size());
    for (auto [k, offset] : llvm::enumerate(held[r]))
      shard.pieces.push_back(
          {ones,
           {offset, getRowMajorStrides(shape)},
           {static_cast<int64_t>(k), Extents(shape.size(), 1)},
           {r},
           1.0});
  }
  return map;
}

ParamMap ucp::testing::makeBigcodeMap(llvm::StringRef name, int64_t qRows,
                                      int64_t kvRows, int64_t cols,
                                      int64_t world) {
  ParamMap map;
  map.name = name.str();
  map.logicalShape = {qRows + kvRows, cols};
  map.worldSize = world;
  Extents fStrides = getRowMajorStrides(map.logicalShape);
  llvm::SmallVector<int64_t, 4> everyone;
  for (int64_t r = 0; r < world; ++r)
    everyone.push_back(r);
  int64_t start = 0;
  for (auto [r, rows] : llvm::enumerate(splitEvenly(qRows, world))) {
    Shard &shard = map.shards.emplace_back();
    shard.rank = r;
    shard.shape = {rows + kvRows, cols};
    if (rows > 0)
      shard.pieces.push_back({{rows, cols},
                              {start * cols, fStrides},
                              {0, fStrides},
                              {static_cast<int64_t>(r)},
                              1.0});
    shard.pieces.push_back({{kvRows, cols},
                            {qRows * cols, fStrides},
                            {rows * cols, fStrides},
                            everyone,
                            1.0});
    start += rows;
  }
  return map;
}

std::vector<ParamMap> ucp::testing::makeLlamaMapSet(int64_t layers,
                                                    int64_t hidden,
                                                    int64_t intermediate,
                                                    int64_t kvHidden,
                                                    int64_t vocab, int64_t tp) {
  std::vector<ParamMap> maps;
  auto rows = [&](std::string name, int64_t out, int64_t in) {
    maps.push_back(makeSplitMap(name, {out, in}, 0, splitEvenly(out, tp)));
  };
  auto columns = [&](std::string name, int64_t out, int64_t in) {
    maps.push_back(makeSplitMap(name, {out, in}, 1, splitEvenly(in, tp)));
  };
  rows("model.embed_tokens.weight", vocab, hidden);
  for (int64_t i = 0; i < layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    maps.push_back(
        makeReplicatedMap(p + "input_layernorm.weight", {hidden}, tp));
    rows(p + "self_attn.q_proj.weight", hidden, hidden);
    rows(p + "self_attn.k_proj.weight", kvHidden, hidden);
    rows(p + "self_attn.v_proj.weight", kvHidden, hidden);
    columns(p + "self_attn.o_proj.weight", hidden, hidden);
    maps.push_back(
        makeReplicatedMap(p + "post_attention_layernorm.weight", {hidden}, tp));
    rows(p + "mlp.gate_proj.weight", intermediate, hidden);
    rows(p + "mlp.up_proj.weight", intermediate, hidden);
    columns(p + "mlp.down_proj.weight", hidden, intermediate);
  }
  maps.push_back(makeReplicatedMap("model.norm.weight", {hidden}, tp));
  rows("lm_head.weight", vocab, hidden);
  return maps;
}

std::vector<std::vector<double>>
ucp::testing::extractShards(const ParamMap &map, llvm::ArrayRef<double> full,
                            double unwritten) {
  std::vector<std::vector<double>> shards;
  for (const Shard &shard : map.shards) {
    std::vector<double> &data =
        shards.emplace_back(getNumElements(shard.shape).value_or(0), unwritten);
    for (const Piece &piece : shard.pieces)
      forEachElement(piece.shape, {piece.source, piece.dest},
                     [&](llvm::ArrayRef<int64_t> at) {
                       data[at[1]] = full[at[0]] * piece.scale;
                     });
  }
  return shards;
}

std::vector<double> ucp::testing::makeMarkers(int64_t n, std::mt19937_64 &rng) {
  std::vector<double> values(n);
  std::uniform_real_distribution<double> noise(0.0, 0.5);
  for (int64_t i = 0; i < n; ++i)
    values[i] = static_cast<double>(i) + noise(rng);
  return values;
}

void ucp::PrintTo(const Piece &p, std::ostream *os) {
  *os << formatList(p.shape) << " src " << p.source.offset << " "
      << formatList(p.source.strides) << " dst " << p.dest.offset << " "
      << formatList(p.dest.strides) << " on " << formatList(p.locations);
  if (p.scale != 1.0)
    *os << " scale " << formatScale(p.scale);
}

std::map<int64_t, std::vector<double>>
ucp::testing::applyPlan(const TransferPlan &plan,
                        const std::map<int64_t, std::vector<double>> &sources,
                        double fillValue, double unwritten) {
  std::map<int64_t, std::vector<double>> targets;
  for (const auto &[rank, shape] : plan.targetShards)
    targets[rank].assign(getNumElements(shape).value_or(0), unwritten);
  for (const Segment &segment : plan.segments) {
    const std::vector<double> &from = sources.at(segment.sourceRank);
    std::vector<double> &to = targets.at(segment.targetRank);
    forEachElement(segment.shape, {segment.source, segment.target},
                   [&](llvm::ArrayRef<int64_t> at) {
                     to[at[1]] = from[at[0]] * segment.scale;
                   });
  }
  for (const Fill &fill : plan.fills) {
    std::vector<double> &to = targets.at(fill.rank);
    forEachElement(fill.shape, {fill.target},
                   [&](llvm::ArrayRef<int64_t> at) { to[at[0]] = fillValue; });
  }
  return targets;
}

//===- RandomMaps.h - Random parameter maps for property tests --*- C++ -*-===//
//
// Generates valid maps of random layouts (grid splits on random axes with
// uneven and empty parts, random replication and scales, flat or stacked
// shards, pieces written with permuted, flattened or padded dimensions) and
// the standard maps of benchmarks.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TEST_UNIT_RANDOMMAPS_H
#define UCP_TEST_UNIT_RANDOMMAPS_H

#include "ucp/Map/ParamMap.h"
#include "ucp/Plan/TransferPlan.h"

#include <map>

#include <ostream>
#include <random>

namespace ucp::testing {

/// Returns a valid map of a random layout of a tensor with at most
/// `maxRank` dimensions of at most `maxExtent` elements over a world of at
/// most `maxWorld` ranks.
ParamMap makeRandomMap(std::mt19937_64 &rng, int maxRank = 4,
                       int64_t maxExtent = 7, int64_t maxWorld = 6);

/// Returns a valid map of a random layout of a tensor of `logicalShape`
/// over a world of at most `maxWorld` ranks, with scales drawn from
/// `scales`.
ParamMap makeRandomMapOf(std::mt19937_64 &rng,
                         llvm::ArrayRef<int64_t> logicalShape,
                         int64_t maxWorld = 6,
                         llvm::ArrayRef<double> scales = {1.0, 1.0, 1.0, 0.5,
                                                          0.25, 3.0});

/// Splits `total` into `parts` sizes, the remainder going to the low ranks
/// (DeepSpeed's default rule: 10/4 -> [3, 3, 2, 2]).
Extents splitEvenly(int64_t total, int64_t parts);

/// Returns the map of `shape` split along `dim` by `sizes` (one shard per
/// part, shards keep F's other extents; a column split when dim > 0).
ParamMap makeSplitMap(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                      int64_t dim, llvm::ArrayRef<int64_t> sizes);

/// Returns the map of `shape` replicated on `world` ranks with `scale`.
ParamMap makeReplicatedMap(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                           int64_t world, double scale = 1.0);

/// Returns a map of `shape` made of one-element pieces: every element of F
/// sits on one rank drawn at random from `world`, and each rank holds its
/// elements in a random order (a 1-D shard). The worst case of an index
/// map: as many pieces as elements.
ParamMap makeScatteredMap(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                          int64_t world, std::mt19937_64 &rng);

/// Returns bigcode's fused QKV map: q rows `[0, qRows)` split among the
/// ranks, the kv rows after them replicated on every rank.
ParamMap makeBigcodeMap(llvm::StringRef name, int64_t qRows, int64_t kvRows,
                        int64_t cols, int64_t world);

/// Returns the map set of a Llama-style model at tensor-parallel degree
/// `tp`: per layer q/k/v/gate/up split by rows, o/down split by columns and
/// two replicated norms; plus embedding, final norm and lm_head.
std::vector<ParamMap> makeLlamaMapSet(int64_t layers, int64_t hidden,
                                      int64_t intermediate, int64_t kvHidden,
                                      int64_t vocab, int64_t tp);

/// The reference extract: every shard of `map` filled from `full` (F in
/// row-major order) by a plain loop over every piece element, as
/// `shard[dest] = full[source] * scale`. Elements no piece writes hold
/// `unwritten`.
std::vector<std::vector<double>> extractShards(const ParamMap &map,
                                               llvm::ArrayRef<double> full,
                                               double unwritten = -1.0);

/// The reference interpreter of plans: applies every copy and fill of
/// `plan` to `sources` (rank -> shard data) element by element. Target
/// elements nothing writes hold `unwritten`.
std::map<int64_t, std::vector<double>>
applyPlan(const TransferPlan &plan,
          const std::map<int64_t, std::vector<double>> &sources,
          double fillValue, double unwritten = -1.0);

/// Returns `n` distinct values, so that every element of F is recognisable.
std::vector<double> makeMarkers(int64_t n, std::mt19937_64 &rng);

} // namespace ucp::testing

namespace ucp {
/// Prints a piece as in the IR, for GoogleTest's failure messages.
void PrintTo(const Piece &piece, std::ostream *os);
} // namespace ucp

#endif // UCP_TEST_UNIT_RANDOMMAPS_H

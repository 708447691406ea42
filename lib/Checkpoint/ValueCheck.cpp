//===- ValueCheck.cpp - The values a checkpoint's states may hold ---------===//

#include "ucp/Checkpoint/ValueCheck.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/CpuFeatures.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <cstring>

using namespace ucp;

namespace {

/// The bit layout of a floating-point type: its width, its exponent and
/// sign masks.
struct FloatBits {
  int bytes = 0;
  uint64_t exponent = 0, sign = 0;
};

std::optional<FloatBits> getFloatBits(DType type) {
  switch (type) {
  case DType::F32:
    return FloatBits{4, 0x7f800000, 0x80000000};
  case DType::BF16:
    return FloatBits{2, 0x7f80, 0x8000};
  case DType::F16:
    return FloatBits{2, 0x7c00, 0x8000};
  case DType::F64:
    return FloatBits{8, 0x7ff0000000000000, 0x8000000000000000};
  default:
    return std::nullopt;
  }
}

/// How many of a shard's words are non-finite and negative, and the first
/// of each.
struct ValueCounts {
  int64_t nonFinite = 0, negative = 0;
  int64_t firstNonFinite = -1, firstNegative = -1;
};

/// Scans `count` words: blocks counted without branches in the words' own
/// width (plain arithmetic the compiler vectorizes, a block too short for
/// a count to wrap), and a block with a finding scanned again for its
/// first. Negatives are counted only where `Negatives`: a state that may
/// hold them does not pay for the test.
template <typename Word, bool Negatives>
[[gnu::always_inline]] inline ValueCounts
scanWords(const char *data, int64_t count, FloatBits bits) {
  ValueCounts counts;
  const Word exponent = Word(bits.exponent), sign = Word(bits.sign);
  auto load = [&](int64_t i) {
    Word word;
    std::memcpy(&word, data + i * sizeof(Word), sizeof(Word));
    return word;
  };
  auto isNonFinite = [&](Word word) -> Word {
    return Word((word & exponent) == exponent);
  };
  // Negative: the sign set, the magnitude neither zero (-0 is not
  // negative) nor non-finite (a NaN with its sign set is a NaN), that is
  // the words sign + 1 ... sign + exponent - 1, one unsigned comparison.
  auto isNegative = [&](Word word) -> Word {
    return Word(Word(word - Word(sign + 1)) < Word(exponent - 1));
  };
  constexpr int64_t kBlock = 4096;
  static_assert(kBlock < (int64_t(1) << 16), "a block's count fits a word");
  for (int64_t start = 0; start < count; start += kBlock) {
    int64_t end = std::min(count, start + kBlock);
    Word nonFinite = 0, negative = 0;
    for (int64_t i = start; i < end; ++i) {
      Word word = load(i);
      nonFinite += isNonFinite(word);
      if constexpr (Negatives)
        negative += isNegative(word);
    }
    for (int64_t i = start; i < end && ((nonFinite && counts.firstNonFinite < 0) ||
                                        (negative && counts.firstNegative < 0));
         ++i) {
      if (nonFinite && counts.firstNonFinite < 0 && isNonFinite(load(i)))
        counts.firstNonFinite = i;
      if (negative && counts.firstNegative < 0 && isNegative(load(i)))
        counts.firstNegative = i;
    }
    counts.nonFinite += nonFinite;
    counts.negative += negative;
  }
  return counts;
}

template <bool Negatives>
[[gnu::always_inline]] inline ValueCounts
scanAnyWidth(const char *data, int64_t count, FloatBits bits) {
  switch (bits.bytes) {
  case 2:
    return scanWords<uint16_t, Negatives>(data, count, bits);
  case 4:
    return scanWords<uint32_t, Negatives>(data, count, bits);
  default:
    return scanWords<uint64_t, Negatives>(data, count, bits);
  }
}

ValueCounts scanBaseline(const char *data, int64_t count, FloatBits bits,
                         bool negatives) {
  return negatives ? scanAnyWidth<true>(data, count, bits)
                   : scanAnyWidth<false>(data, count, bits);
}

#if UCP_HAVE_X86_VECTOR_PATHS
/// The same loops built for AVX2: twice the words per instruction, and
/// the scan keeps up with memory where the baseline's does not.
__attribute__((target("avx2"))) ValueCounts
scanAvx2(const char *data, int64_t count, FloatBits bits, bool negatives) {
  return negatives ? scanAnyWidth<true>(data, count, bits)
                   : scanAnyWidth<false>(data, count, bits);
}
#endif

ValueCounts scanValues(const char *data, int64_t count, FloatBits bits,
                       bool negatives) {
#if UCP_HAVE_X86_VECTOR_PATHS
  if (hasAvx2())
    return scanAvx2(data, count, bits, negatives);
#endif
  return scanBaseline(data, count, bits, negatives);
}

/// `value` as printf's %g writes it.
std::string formatValue(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

} // namespace

void ValueScan::add(const char *data, int64_t elements) {
  ValueScan part(state, type, rank);
  part.scanned = elements;
  if (std::optional<FloatBits> bits = getFloatBits(type); bits && data) {
    ValueCounts counts =
        scanValues(data, elements, *bits, state == TensorState::ExpAvgSq);
    part.nonFinite = counts.nonFinite;
    part.negative = counts.negative;
    part.firstNonFinite = counts.firstNonFinite;
    part.firstNegative = counts.firstNegative;
  }
  append(part);
}

void ValueScan::append(const ValueScan &next) {
  if (next.nonFinite && firstNonFinite < 0)
    firstNonFinite = scanned + next.firstNonFinite;
  if (next.negative && firstNegative < 0)
    firstNegative = scanned + next.firstNegative;
  nonFinite += next.nonFinite;
  negative += next.negative;
  scanned += next.scanned;
}

llvm::SmallVector<ValueProblem, 2> ValueScan::getProblems() const {
  llvm::SmallVector<ValueProblem, 2> problems;
  if (nonFinite)
    problems.push_back({rank, firstNonFinite, nonFinite, false});
  if (negative)
    problems.push_back({rank, firstNegative, negative, true});
  return problems;
}

llvm::SmallVector<ValueProblem, 2>
ucp::findValueProblems(TensorState state, DType type, int64_t rank,
                       const char *data, int64_t elements) {
  ValueScan scan(state, type, rank);
  scan.add(data, elements);
  return scan.getProblems();
}

std::optional<Extents> ucp::locateElement(const ParamMap &map, int64_t rank,
                                          int64_t offset) {
  for (const Shard &shard : map.shards) {
    if (shard.rank != rank)
      continue;
    for (const Piece &piece : shard.pieces) {
      // The piece's index, its dimensions taken by decreasing shard stride.
      std::vector<size_t> dims;
      for (size_t d = 0; d < piece.shape.size(); ++d)
        if (piece.shape[d] > 1 && piece.dest.strides[d] > 0)
          dims.push_back(d);
      llvm::sort(dims, [&](size_t a, size_t b) {
        return piece.dest.strides[a] > piece.dest.strides[b];
      });
      int64_t rest = offset - piece.dest.offset;
      if (rest < 0)
        continue;
      Extents index(piece.shape.size(), 0);
      for (size_t d : dims) {
        index[d] = std::min(rest / piece.dest.strides[d], piece.shape[d] - 1);
        rest -= index[d] * piece.dest.strides[d];
      }
      if (rest != 0)
        continue;
      int64_t inF = piece.source.offset;
      for (size_t d = 0; d < index.size(); ++d)
        inF += index[d] * piece.source.strides[d];
      return unravelIndex(inF, map.logicalShape);
    }
  }
  return std::nullopt;
}

std::string ucp::describeValueProblem(const ParamMap &map, TensorState state,
                                      DType type, const ValueProblem &problem,
                                      llvm::StringRef file, const char *data) {
  int64_t shardElements = 0;
  for (const Shard &shard : map.shards)
    if (shard.rank == problem.rank)
      shardElements = getNumElements(shard.shape).value_or(0);
  std::optional<Extents> element =
      locateElement(map, problem.rank, problem.first);
  double value =
      readElement(type, data + problem.first * getElementSize(type));
  return llvm::formatv(
      "{0}: tensor '{1}', {2}, rank {3}: {4} of the shard's {5} elements {6}, "
      "the first element {7} of F ({8})",
      file, map.name, getStateName(state), problem.rank, problem.count,
      shardElements, problem.negative ? "negative" : "NaN or infinite",
      element ? formatList(*element)
              : "at offset " + std::to_string(problem.first) + " of the shard",
      formatValue(value));
}

bool ucp::isFatal(TensorState state, const ValueProblem &problem,
                  bool nonFiniteWeightsFatal) {
  return state != TensorState::Weight || nonFiniteWeightsFatal ||
         problem.negative;
}

llvm::Error
ucp::checkStateValues(const ParamMap &map, TensorState state, DType type,
                      const std::map<int64_t, const char *> &shards,
                      llvm::function_ref<std::string(int64_t)> fileOf) {
  if (state == TensorState::Weight)
    return llvm::Error::success();
  std::vector<std::pair<int64_t, const char *>> held;
  std::vector<int64_t> elements;
  for (const Shard &shard : map.shards) {
    auto found = shards.find(shard.rank);
    if (found == shards.end() || !found->second)
      continue;
    held.push_back(*found);
    elements.push_back(getNumElements(shard.shape).value_or(0));
  }
  std::vector<llvm::SmallVector<ValueProblem, 2>> problems(held.size());
  llvm::parallelFor(0, held.size(), [&](size_t i) {
    problems[i] = findValueProblems(state, type, held[i].first,
                                    held[i].second, elements[i]);
  });
  size_t bad = llvm::count_if(problems, [](const auto &p) { return !p.empty(); });
  for (size_t i = 0; i < held.size(); ++i) {
    if (problems[i].empty())
      continue;
    std::string more =
        bad > 1 ? " (and " + std::to_string(bad - 1) + " more shard" +
                      (bad > 2 ? "s" : "") + " of it)"
                : "";
    return makeError(describeValueProblem(map, state, type, problems[i][0],
                                          fileOf(held[i].first),
                                          held[i].second) +
                     more +
                     ": masters and moments must be finite, exp_avg_sq never "
                     "negative; `affine-run check` lists every such shard, "
                     "--no-value-check converts it anyway");
  }
  return llvm::Error::success();
}

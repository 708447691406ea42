//===- MasterRounding.cpp - Weights that are their masters rounded --------===//

#include "ucp/Checkpoint/MasterRounding.h"
#include "ucp/Element/FloatBits.h"
#include "ucp/Support/CpuFeatures.h"

#include <cstring>

using namespace ucp;

bool ucp::matchesMaster(DType type, const char *weight, float master) {
  uint32_t bits = ucpFloatToBits(master);
  bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  switch (type) {
  case DType::F32: {
    uint32_t stored;
    std::memcpy(&stored, weight, sizeof(stored));
    return stored == bits || (nan && (stored & 0x7fffffffu) > 0x7f800000u);
  }
  case DType::BF16: {
    uint16_t stored;
    std::memcpy(&stored, weight, sizeof(stored));
    return stored == ucpFloatToBfloat(master) ||
           (nan && (stored & 0x7fffu) > 0x7f80u);
  }
  case DType::F16: {
    uint16_t stored;
    std::memcpy(&stored, weight, sizeof(stored));
    return stored == ucpFloatToHalf(master) ||
           (nan && (stored & 0x7fffu) > 0x7c00u);
  }
  default:
    return true; // Not a type masters are written to.
  }
}

namespace {

/// How many of `count` bf16 or f32 (`Weight`) weights differ from their
/// masters, counted without branches so that the compiler vectorizes the
/// loop (one instruction per several elements; this runs over every
/// trainable weight of a checkpoint).
template <typename Weight>
[[gnu::always_inline]] inline int64_t
countMismatches(const char *weights, const char *masters, int64_t count) {
  int64_t differ = 0;
  for (int64_t i = 0; i < count; ++i) {
    Weight stored;
    std::memcpy(&stored, weights + sizeof(Weight) * i, sizeof(Weight));
    uint32_t bits;
    std::memcpy(&bits, masters + 4 * i, 4);
    unsigned nan = (bits & 0x7fffffffu) > 0x7f800000u;
    if constexpr (sizeof(Weight) == 2) {
      // ucpFloatToBfloat's rounding of a non-NaN, written inline so that
      // the loop has no branch.
      uint16_t rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
      unsigned storedNan = (stored & 0x7fffu) > 0x7f80u;
      // A NaN master matches any NaN weight; others, the rounded bits.
      differ += (nan & (storedNan ^ 1u)) | ((nan ^ 1u) & (stored != rounded));
    } else {
      unsigned storedNan = (stored & 0x7fffffffu) > 0x7f800000u;
      differ += (nan & (storedNan ^ 1u)) | ((nan ^ 1u) & (stored != bits));
    }
  }
  return differ;
}

[[gnu::always_inline]] inline int64_t
countVectorizable(DType type, const char *weights, const char *masters,
                  int64_t count) {
  return type == DType::BF16
             ? countMismatches<uint16_t>(weights, masters, count)
             : countMismatches<uint32_t>(weights, masters, count);
}

int64_t countBaseline(DType type, const char *weights, const char *masters,
                      int64_t count) {
  return countVectorizable(type, weights, masters, count);
}

#if UCP_HAVE_X86_VECTOR_PATHS
/// The same loop built for AVX2: eight elements per instruction, at memory
/// speed where the baseline's four are not.
__attribute__((target("avx2"))) int64_t
countAvx2(DType type, const char *weights, const char *masters,
          int64_t count) {
  return countVectorizable(type, weights, masters, count);
}
#endif

} // namespace

bool ucp::allMatchMasters(DType type, const char *weights,
                          const char *masters, int64_t count) {
  if (type != DType::BF16 && type != DType::F32) {
    for (int64_t i = 0; i < count; ++i) {
      float master;
      std::memcpy(&master, masters + 4 * i, 4);
      if (!matchesMaster(type, weights + i * getElementSize(type), master))
        return false;
    }
    return true;
  }
#if UCP_HAVE_X86_VECTOR_PATHS
  if (hasAvx2())
    return countAvx2(type, weights, masters, count) == 0;
#endif
  return countBaseline(type, weights, masters, count) == 0;
}

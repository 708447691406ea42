//===- FloatBitsTest.cpp - 8-bit float conversions against the definition -===//
//
// The f8 conversions of FloatBits.h (bit tricks shared by the CPU executor
// and the CUDA kernels) against a plain reference: every code decoded by
// the formula of its format, and f32 values encoded by searching all codes
// for the nearest, ties to the even code, with PyTorch's rules past the
// largest finite value (NaN for e4m3fn, infinity for e5m2).
//
//===----------------------------------------------------------------------===//

#include "ucp/Element/FloatBits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

namespace {

/// An 8-bit float format, and the conversions under test.
struct Format {
  const char *name;
  int exponentBits, mantissaBits;
  /// e5m2 has IEEE infinities; e4m3fn has none and one NaN per sign.
  bool hasInfinity;
  uint8_t largestFinite;
  float (*decode)(unsigned char);
  unsigned char (*encode)(float);
};

const Format kFormats[] = {
    {"e4m3fn", 4, 3, false, 0x7e, ucpE4M3ToFloat, ucpFloatToE4M3},
    {"e5m2", 5, 2, true, 0x7b, ucpE5M2ToFloat, ucpFloatToE5M2},
};

bool isNaNCode(const Format &f, uint8_t code) {
  uint8_t magnitude = code & 0x7f;
  return f.hasInfinity ? magnitude > 0x7c : magnitude == 0x7f;
}

/// The value of the magnitude code `code` read as a normal or subnormal
/// number of `f`, whatever the format reserves it for.
double formulaValue(const Format &f, int code) {
  int bias = (1 << (f.exponentBits - 1)) - 1;
  int exponent = code >> f.mantissaBits;
  int mantissa = code & ((1 << f.mantissaBits) - 1);
  if (exponent == 0)
    return std::ldexp(mantissa, 1 - bias - f.mantissaBits);
  return std::ldexp((1 << f.mantissaBits) + mantissa,
                    exponent - bias - f.mantissaBits);
}

/// The reference encoding of `value` in `f`.
uint8_t referenceEncode(const Format &f, float value) {
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  if (std::isnan(value))
    return sign | 0x7f;
  // The code after the largest finite one stands for "rounds past it".
  int past = f.largestFinite + 1;
  uint8_t overflow = f.hasInfinity ? 0x7c : 0x7f;
  if (std::isinf(value))
    return sign | overflow;
  double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude >= formulaValue(f, past)) // Distances below are then exact.
    return sign | overflow;
  int best = 0;
  for (int code = 1; code <= past; ++code) {
    double distance = std::fabs(formulaValue(f, code) - magnitude);
    double bestDistance = std::fabs(formulaValue(f, best) - magnitude);
    if (distance < bestDistance || (distance == bestDistance && code % 2 == 0))
      best = code;
  }
  return sign | (best == past ? overflow : best);
}

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

TEST(FloatBits, EveryF8CodeDecodesByItsFormula) {
  for (const Format &f : kFormats)
    for (int code = 0; code < 256; ++code) {
      float value = f.decode(code);
      if (isNaNCode(f, code)) {
        EXPECT_TRUE(std::isnan(value)) << f.name << " " << code;
        continue;
      }
      uint8_t magnitude = code & 0x7f;
      double expected = f.hasInfinity && magnitude == 0x7c
                            ? INFINITY
                            : formulaValue(f, magnitude);
      if (code & 0x80)
        expected = -expected;
      EXPECT_EQ(bitsOf(value), bitsOf(static_cast<float>(expected)))
          << f.name << " code " << code;
    }
}

TEST(FloatBits, EveryF8CodeEncodesBackToItself) {
  for (const Format &f : kFormats)
    for (int code = 0; code < 256; ++code)
      EXPECT_EQ(f.encode(f.decode(code)),
                isNaNCode(f, code) ? (code & 0x80) | 0x7f : code)
          << f.name << " code " << code;
}

/// Halfway points between neighbouring codes, and the floats either side of
/// them: where rounding decides, subnormals and overflow included.
TEST(FloatBits, F8EncodingRoundsToNearestEven) {
  for (const Format &f : kFormats)
    for (int code = 0; code <= f.largestFinite + 1; ++code) {
      float low = static_cast<float>(formulaValue(f, code));
      float high = static_cast<float>(formulaValue(f, code + 1));
      float middle = (low + high) / 2; // Exact: one more bit than the codes.
      for (float value : {middle, std::nextafter(middle, 0.0f),
                          std::nextafter(middle, INFINITY), low, high})
        for (float x : {value, -value})
          ASSERT_EQ(f.encode(x), referenceEncode(f, x)) << f.name << " " << x;
    }
}

TEST(FloatBits, F8EncodingMatchesTheReferenceOnRandomFloats) {
  std::mt19937_64 rng(7);
  for (const Format &f : kFormats)
    for (int i = 0; i < 200000; ++i) {
      uint32_t bits = static_cast<uint32_t>(rng());
      if (i % 2) // Half of them near the format's range: exponents 2^-20..2^17.
        bits = (bits & 0x807fffffu) | uint32_t(107 + rng() % 38) << 23;
      float value = floatOf(bits);
      ASSERT_EQ(f.encode(value), referenceEncode(f, value))
          << f.name << " bits " << std::hex << bits;
    }
}

TEST(FloatBits, ScaledF8NaNsKeepTheirBitsAndInfinitiesStay) {
  EXPECT_EQ(ucpScaleE4M3Bits(0x7f, 0.5f), 0x7f);
  EXPECT_EQ(ucpScaleE4M3Bits(0xff, 0.5f), 0xff);
  EXPECT_EQ(ucpScaleE4M3Bits(0x40, 0.5f), 0x38); // 2 -> 1
  EXPECT_EQ(ucpScaleE4M3Bits(0x7e, 2.0f), 0x7f); // 448 * 2: past the range
  EXPECT_EQ(ucpScaleE5M2Bits(0x7d, 0.5f), 0x7d);
  EXPECT_EQ(ucpScaleE5M2Bits(0xfe, 0.5f), 0xfe);
  EXPECT_EQ(ucpScaleE5M2Bits(0x40, 0.5f), 0x3c); // 2 -> 1
  EXPECT_EQ(ucpScaleE5M2Bits(0xfc, 0.5f), 0xfc); // -inf
  EXPECT_EQ(ucpScaleE5M2Bits(0x7b, 2.0f), 0x7c); // 57344 * 2: infinity
}

} // namespace

//===- FloatBits.h - Narrow float conversions, host and device --*- C++ -*-===//
//
// Bit-level conversions between f32 and the 16- and 8-bit float formats,
// with round-to-nearest-even. This one header is compiled into the CPU
// executor and pasted verbatim into the CUDA source affine-translate emits,
// so both executors scale narrow floats with the same arithmetic, bit for
// bit. It uses only builtin types: NVRTC compiles it without any system
// header.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ELEMENT_FLOATBITS_H
#define UCP_ELEMENT_FLOATBITS_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define UCP_HOST_DEVICE __host__ __device__
#else
#define UCP_HOST_DEVICE
#endif

UCP_HOST_DEVICE inline float ucpBitsToFloat(unsigned int bits) {
  union {
    unsigned int u;
    float f;
  } pun;
  pun.u = bits;
  return pun.f;
}

UCP_HOST_DEVICE inline unsigned int ucpFloatToBits(float value) {
  union {
    unsigned int u;
    float f;
  } pun;
  pun.f = value;
  return pun.u;
}

/// IEEE binary16 to f32 (exact).
UCP_HOST_DEVICE inline float ucpHalfToFloat(unsigned short h) {
  unsigned int sign = (unsigned int)(h >> 15) << 31;
  unsigned int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0x1f)
    return ucpBitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0)
      return ucpBitsToFloat(sign);
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ff;
    return ucpBitsToFloat(sign | (unsigned int)(127 - 15 + 1 - shift) << 23 |
                          (mantissa << 13));
  }
  return ucpBitsToFloat(sign | (exponent + 127 - 15) << 23 | (mantissa << 13));
}

/// f32 to IEEE binary16, rounding to nearest even.
UCP_HOST_DEVICE inline unsigned short ucpFloatToHalf(float value) {
  unsigned int bits = ucpFloatToBits(value);
  unsigned short sign = (bits >> 16) & 0x8000;
  unsigned int exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
  if (exponent == 0xff) // Inf, or NaN kept quiet.
    return sign | 0x7c00 | (mantissa ? 0x200 | (mantissa >> 13) : 0);
  int e = (int)exponent - 127 + 15;
  if (e >= 0x1f)
    return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10)
      return sign;
    mantissa |= 0x800000;
    unsigned int shift = 14 - e;
    unsigned int half = mantissa >> shift;
    unsigned int rest = mantissa & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1)))
      ++half;
    return sign | half;
  }
  unsigned int half = ((unsigned int)e << 10) | (mantissa >> 13);
  unsigned int rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // May carry into the exponent, correctly.
  return sign | half;
}

/// bfloat16 to f32 (exact).
UCP_HOST_DEVICE inline float ucpBfloatToFloat(unsigned short b) {
  return ucpBitsToFloat((unsigned int)b << 16);
}

/// f32 to bfloat16, rounding to nearest even.
UCP_HOST_DEVICE inline unsigned short ucpFloatToBfloat(float value) {
  unsigned int bits = ucpFloatToBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return (bits >> 16) | 0x40; // Quiet NaN.
  unsigned int rounding = 0x7fff + ((bits >> 16) & 1);
  return (bits + rounding) >> 16;
}

// The 8-bit floats are safetensors' F8_E4M3 and F8_E5M2, PyTorch's
// float8_e4m3fn and float8_e5m2, and convert from f32 as PyTorch converts
// them.

/// f8 e4m3fn to f32 (exact). The format has no infinities: 0x7f and 0xff
/// are its NaNs.
UCP_HOST_DEVICE inline float ucpE4M3ToFloat(unsigned char b) {
  unsigned int sign = (unsigned int)(b >> 7) << 31;
  unsigned int exponent = (b >> 3) & 0xf, mantissa = b & 0x7;
  if (exponent == 0xf && mantissa == 0x7)
    return ucpBitsToFloat(sign | 0x7fc00000u);
  if (exponent == 0) // Subnormal: mantissa * 2^-9.
    return ucpBitsToFloat(sign |
                          ucpFloatToBits((float)mantissa * 0.001953125f));
  return ucpBitsToFloat(sign | (exponent + 127 - 7) << 23 | mantissa << 20);
}

/// f8 e5m2 to f32 (exact): an e5m2 is the upper byte of an IEEE binary16.
UCP_HOST_DEVICE inline float ucpE5M2ToFloat(unsigned char b) {
  return ucpHalfToFloat((unsigned short)(b << 8));
}

/// The magnitude of the finite f32 `bits` as a binary float of
/// `exponentBits` exponent bits (IEEE bias) and `mantissaBits` (at most 10)
/// mantissa bits, rounded to nearest even, subnormals included. A result
/// past the format's largest finite value is left for the caller to map.
UCP_HOST_DEVICE inline unsigned int
ucpNarrowMagnitude(unsigned int bits, int exponentBits, int mantissaBits) {
  unsigned int exponent = (bits >> 23) & 0xff;
  if (exponent == 0) // f32 subnormals lie far below half of any subnormal.
    return 0;
  unsigned int significand = (bits & 0x7fffff) | 0x800000;
  int e = (int)exponent - 127 + (1 << (exponentBits - 1)) - 1;
  // Normal: exponent field e, the implicit bit carrying into it. Subnormal:
  // exponent field 0 and the significand shifted further right.
  unsigned int shift = 23 - mantissaBits, base = 0;
  if (e >= 1)
    base = (unsigned int)(e - 1) << mantissaBits;
  else
    shift += 1 - e;
  if (shift > 24) // Below half of the smallest subnormal.
    return 0;
  unsigned int code = base + (significand >> shift);
  unsigned int rest = significand & ((1u << shift) - 1);
  unsigned int mid = 1u << (shift - 1);
  if (rest > mid || (rest == mid && (code & 1)))
    ++code; // May carry into the exponent, correctly.
  return code;
}

/// f32 to f8 e4m3fn, rounding to nearest even. A magnitude that rounds
/// past 448, the largest finite value, becomes NaN, as do infinities.
UCP_HOST_DEVICE inline unsigned char ucpFloatToE4M3(float value) {
  unsigned int bits = ucpFloatToBits(value);
  unsigned char sign = (bits >> 24) & 0x80;
  if ((bits & 0x7fffffffu) >= 0x7f800000u)
    return sign | 0x7f;
  unsigned int code = ucpNarrowMagnitude(bits, 4, 3);
  return sign | (code > 0x7e ? 0x7f : code);
}

/// f32 to f8 e5m2, rounding to nearest even. A magnitude that rounds past
/// 57344, the largest finite value, becomes infinity.
UCP_HOST_DEVICE inline unsigned char ucpFloatToE5M2(float value) {
  unsigned int bits = ucpFloatToBits(value);
  unsigned char sign = (bits >> 24) & 0x80;
  unsigned int magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return sign | 0x7f;
  if (magnitude == 0x7f800000u)
    return sign | 0x7c;
  unsigned int code = ucpNarrowMagnitude(bits, 5, 2);
  return sign | (code > 0x7c ? 0x7c : code);
}

// Scaling one element, given and returned as its bits. A NaN keeps its bits:
// processors disagree on the NaN a product of a NaN returns (x86 keeps the
// operand's payload, a GPU returns its canonical NaN), and the CPU and CUDA
// executors must write the same bytes.

UCP_HOST_DEVICE inline unsigned int ucpScaleFloatBits(unsigned int bits,
                                                      float factor) {
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return bits;
  return ucpFloatToBits(ucpBitsToFloat(bits) * factor);
}

UCP_HOST_DEVICE inline unsigned long long
ucpScaleDoubleBits(unsigned long long bits, double factor) {
  if ((bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull)
    return bits;
  union {
    unsigned long long u;
    double d;
  } pun;
  pun.u = bits;
  pun.d *= factor;
  return pun.u;
}

UCP_HOST_DEVICE inline unsigned short ucpScaleHalfBits(unsigned short bits,
                                                       float factor) {
  if ((bits & 0x7fff) > 0x7c00)
    return bits;
  return ucpFloatToHalf(ucpHalfToFloat(bits) * factor);
}

UCP_HOST_DEVICE inline unsigned short ucpScaleBfloatBits(unsigned short bits,
                                                         float factor) {
  if ((bits & 0x7fff) > 0x7f80)
    return bits;
  return ucpFloatToBfloat(ucpBfloatToFloat(bits) * factor);
}

UCP_HOST_DEVICE inline unsigned char ucpScaleE4M3Bits(unsigned char bits,
                                                      float factor) {
  if ((bits & 0x7f) == 0x7f)
    return bits;
  return ucpFloatToE4M3(ucpE4M3ToFloat(bits) * factor);
}

UCP_HOST_DEVICE inline unsigned char ucpScaleE5M2Bits(unsigned char bits,
                                                      float factor) {
  if ((bits & 0x7f) > 0x7c)
    return bits;
  return ucpFloatToE5M2(ucpE5M2ToFloat(bits) * factor);
}

#endif // UCP_ELEMENT_FLOATBITS_H

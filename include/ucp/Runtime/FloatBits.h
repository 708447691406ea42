//===- FloatBits.h - f16 and bf16 conversions, host and device --*- C++ -*-===//
//
// Bit-level conversions between f32 and the 16-bit float formats, with
// round-to-nearest-even. This one header is compiled into the CPU executor
// and pasted verbatim into the CUDA source affine-translate emits, so both
// executors scale 16-bit floats with the same arithmetic, bit for bit. It
// uses only builtin types: NVRTC compiles it without any system header.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_RUNTIME_FLOATBITS_H
#define UCP_RUNTIME_FLOATBITS_H

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

#endif // UCP_RUNTIME_FLOATBITS_H

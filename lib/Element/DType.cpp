//===- DType.cpp - Element types of tensor files --------------------------===//

#include "ucp/Element/DType.h"
#include "ucp/Element/FloatBits.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Parallel.h"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

using namespace ucp;

int64_t ucp::getElementSize(DType type) {
  switch (type) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
    return 2;
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  }
  llvm_unreachable("unknown dtype");
}

std::optional<int64_t> ucp::getNumBytes(llvm::ArrayRef<int64_t> shape,
                                        DType type) {
  int64_t bytes = getElementSize(type);
  for (int64_t extent : shape)
    if (extent < 0 || llvm::MulOverflow(bytes, extent, bytes))
      return std::nullopt;
  return bytes;
}

namespace {
/// The smallest normal and the largest finite magnitude of a float type.
struct NormalRange {
  double smallest;
  double largest;
};
} // namespace

/// Returns the normal range of a float `type`, or nothing for the others.
static std::optional<NormalRange> getNormalRange(DType type) {
  switch (type) {
  case DType::F64:
    return NormalRange{std::numeric_limits<double>::min(),
                       std::numeric_limits<double>::max()};
  case DType::F32:
    return NormalRange{std::numeric_limits<float>::min(),
                       std::numeric_limits<float>::max()};
  case DType::F16:
    return NormalRange{std::ldexp(1.0, -14), 65504.0};
  case DType::BF16:
    return NormalRange{std::numeric_limits<float>::min(),
                       std::ldexp(255.0, 120)};
  case DType::F8E4M3:
    return NormalRange{std::ldexp(1.0, -6), 448.0};
  case DType::F8E5M2:
    return NormalRange{std::ldexp(1.0, -14), 57344.0};
  default:
    return std::nullopt;
  }
}

bool ucp::isRepresentableFactor(DType type, double factor) {
  std::optional<NormalRange> range = getNormalRange(type);
  if (!range)
    return factor == 1.0;
  double magnitude = std::fabs(factor);
  return std::isfinite(factor) && magnitude >= range->smallest &&
         magnitude <= range->largest;
}

std::string ucp::describeFactorRange(DType type) {
  std::optional<NormalRange> range = getNormalRange(type);
  if (!range)
    return "[1, 1]";
  char text[64];
  std::snprintf(text, sizeof(text), "[%.9g, %.9g]", range->smallest,
                range->largest);
  return text;
}

llvm::StringRef ucp::getSafetensorsName(DType type) {
  switch (type) {
  case DType::F64:
    return "F64";
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::F8E4M3:
    return "F8_E4M3";
  case DType::F8E5M2:
    return "F8_E5M2";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::I16:
    return "I16";
  case DType::I8:
    return "I8";
  case DType::U8:
    return "U8";
  case DType::Bool:
    return "BOOL";
  }
  llvm_unreachable("unknown dtype");
}

std::optional<DType> ucp::parseSafetensorsName(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("F64", DType::F64)
      .Case("F32", DType::F32)
      .Case("F16", DType::F16)
      .Case("BF16", DType::BF16)
      .Case("F8_E4M3", DType::F8E4M3)
      .Case("F8_E5M2", DType::F8E5M2)
      .Case("I64", DType::I64)
      .Case("I32", DType::I32)
      .Case("I16", DType::I16)
      .Case("I8", DType::I8)
      .Case("U8", DType::U8)
      .Case("BOOL", DType::Bool)
      .Default(std::nullopt);
}

llvm::ArrayRef<DTypeSpelling> ucp::getDTypeSpellings() {
  static const DTypeSpelling kSpellings[] = {{"f64", DType::F64},
                                             {"fp64", DType::F64},
                                             {"float64", DType::F64},
                                             {"f32", DType::F32},
                                             {"fp32", DType::F32},
                                             {"float32", DType::F32},
                                             {"f16", DType::F16},
                                             {"fp16", DType::F16},
                                             {"float16", DType::F16},
                                             {"bf16", DType::BF16},
                                             {"bfloat16", DType::BF16},
                                             {"f8e4m3", DType::F8E4M3},
                                             {"fp8_e4m3", DType::F8E4M3},
                                             {"float8_e4m3fn", DType::F8E4M3},
                                             {"f8e5m2", DType::F8E5M2},
                                             {"fp8_e5m2", DType::F8E5M2},
                                             {"float8_e5m2", DType::F8E5M2},
                                             {"i64", DType::I64},
                                             {"int64", DType::I64},
                                             {"i32", DType::I32},
                                             {"int32", DType::I32},
                                             {"i16", DType::I16},
                                             {"int16", DType::I16},
                                             {"i8", DType::I8},
                                             {"int8", DType::I8},
                                             {"u8", DType::U8},
                                             {"uint8", DType::U8},
                                             {"bool", DType::Bool}};
  return kSpellings;
}

llvm::StringRef ucp::getDTypeName(DType type) {
  for (const DTypeSpelling &spelling : getDTypeSpellings())
    if (spelling.type == type)
      return spelling.name;
  llvm_unreachable("every type has a spelling");
}

llvm::StringRef ucp::getDTypeDescription(DType type) {
  switch (type) {
  case DType::F64:
    return "64-bit float";
  case DType::F32:
    return "32-bit float";
  case DType::F16:
    return "16-bit float (IEEE half)";
  case DType::BF16:
    return "bfloat16";
  case DType::F8E4M3:
    return "8-bit float, 4 exponent bits (float8_e4m3fn)";
  case DType::F8E5M2:
    return "8-bit float, 5 exponent bits";
  case DType::I64:
    return "64-bit integer";
  case DType::I32:
    return "32-bit integer";
  case DType::I16:
    return "16-bit integer";
  case DType::I8:
    return "8-bit integer";
  case DType::U8:
    return "8-bit unsigned integer";
  case DType::Bool:
    return "boolean";
  }
  llvm_unreachable("unknown dtype");
}

std::optional<DType> ucp::parseDTypeName(llvm::StringRef name) {
  std::string lower = name.lower();
  for (const DTypeSpelling &spelling : getDTypeSpellings())
    if (spelling.name == lower)
      return spelling.type;
  return std::nullopt;
}

std::string ucp::describeDTypeNames(llvm::ArrayRef<DType> types) {
  std::string text;
  for (DType type : types) {
    std::string others;
    for (const DTypeSpelling &spelling : getDTypeSpellings())
      if (spelling.type == type && spelling.name != getDTypeName(type))
        others += (others.empty() ? "" : ", ") + spelling.name.str();
    text += (text.empty() ? "" : ", ") + getDTypeName(type).str() +
            (others.empty() ? "" : " (" + others + ")");
  }
  return text;
}

bool ucp::isFloatingPoint(DType type) {
  return type == DType::F64 || type == DType::F32 || type == DType::F16 ||
         type == DType::BF16 || type == DType::F8E4M3 || type == DType::F8E5M2;
}

/// Replaces each of the `count` elements of type T at `data` by
/// `scale(element)`. The data need not be aligned to T (a tensor file does
/// not promise it): elements move through memcpy.
template <typename T, typename Scale>
static void scaleEach(void *data, int64_t count, Scale scale) {
  auto *bytes = static_cast<char *>(data);
  for (int64_t i = 0; i < count; ++i) {
    T bits;
    std::memcpy(&bits, bytes + i * sizeof(T), sizeof(T));
    bits = scale(bits);
    std::memcpy(bytes + i * sizeof(T), &bits, sizeof(T));
  }
}

void ucp::scaleElements(DType type, void *data, int64_t count, double factor) {
  float f = static_cast<float>(factor);
  switch (type) {
  case DType::F64:
    return scaleEach<uint64_t>(data, count, [&](uint64_t bits) {
      return ucpScaleDoubleBits(bits, factor);
    });
  case DType::F32:
    return scaleEach<uint32_t>(
        data, count, [&](uint32_t bits) { return ucpScaleFloatBits(bits, f); });
  case DType::F16:
    return scaleEach<uint16_t>(
        data, count, [&](uint16_t bits) { return ucpScaleHalfBits(bits, f); });
  case DType::BF16:
    return scaleEach<uint16_t>(data, count, [&](uint16_t bits) {
      return ucpScaleBfloatBits(bits, f);
    });
  case DType::F8E4M3:
    return scaleEach<uint8_t>(
        data, count, [&](uint8_t bits) { return ucpScaleE4M3Bits(bits, f); });
  case DType::F8E5M2:
    return scaleEach<uint8_t>(
        data, count, [&](uint8_t bits) { return ucpScaleE5M2Bits(bits, f); });
  default:
    llvm::report_fatal_error("scaleElements: not a floating-point dtype");
  }
}

void ucp::writeRandomElements(DType type, void *data, int64_t count,
                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto *bytes = static_cast<uint8_t *>(data);
  for (int64_t i = 0; i < count; ++i) {
    switch (type) {
    case DType::F64: {
      double v = uniform(rng);
      std::memcpy(bytes + 8 * i, &v, 8);
      break;
    }
    case DType::F32: {
      float v = uniform(rng);
      std::memcpy(bytes + 4 * i, &v, 4);
      break;
    }
    case DType::F16: {
      uint16_t v = ucpFloatToHalf(uniform(rng));
      std::memcpy(bytes + 2 * i, &v, 2);
      break;
    }
    case DType::BF16: {
      uint16_t v = ucpFloatToBfloat(uniform(rng));
      std::memcpy(bytes + 2 * i, &v, 2);
      break;
    }
    case DType::F8E4M3:
    case DType::F8E5M2:
      // Exponents below the top one: finite values only.
      bytes[i] = static_cast<uint8_t>(rng() & 0xb7);
      break;
    case DType::Bool:
      bytes[i] = rng() & 1;
      break;
    default: {
      uint64_t v = rng();
      std::memcpy(bytes + getElementSize(type) * i, &v, getElementSize(type));
      break;
    }
    }
  }
}

/// Reads a T from unaligned bytes.
template <typename T> static T load(const void *data) {
  T value;
  std::memcpy(&value, data, sizeof(T));
  return value;
}

double ucp::readElement(DType type, const void *data) {
  switch (type) {
  case DType::F64:
    return load<double>(data);
  case DType::F32:
    return load<float>(data);
  case DType::F16:
    return ucpHalfToFloat(load<uint16_t>(data));
  case DType::BF16:
    return ucpBfloatToFloat(load<uint16_t>(data));
  case DType::F8E4M3:
    return ucpE4M3ToFloat(load<uint8_t>(data));
  case DType::F8E5M2:
    return ucpE5M2ToFloat(load<uint8_t>(data));
  case DType::I64:
    return static_cast<double>(load<int64_t>(data));
  case DType::I32:
    return load<int32_t>(data);
  case DType::I16:
    return load<int16_t>(data);
  case DType::I8:
    return load<int8_t>(data);
  case DType::U8:
  case DType::Bool:
    return load<uint8_t>(data);
  }
  llvm_unreachable("every dtype is handled");
}

/// Elements converted per task of a parallel conversion.
constexpr int64_t kConversionChunk = int64_t(1) << 20;

void ucp::narrowFloat32(const float *from, int64_t count, DType type,
                        char *to) {
  if (type == DType::F32) {
    std::memcpy(to, from, count * 4);
    return;
  }
  llvm::parallelFor(
      0, llvm::divideCeil(count, kConversionChunk), [&](size_t c) {
        int64_t end = std::min<int64_t>(count, (c + 1) * kConversionChunk);
        for (int64_t e = c * kConversionChunk; e < end; ++e) {
          uint16_t bits = type == DType::BF16 ? ucpFloatToBfloat(from[e])
                                              : ucpFloatToHalf(from[e]);
          std::memcpy(to + e * 2, &bits, 2);
        }
      });
}

void ucp::widenToFloat32(const char *from, int64_t count, DType type,
                         float *to) {
  if (type == DType::F32) {
    std::memcpy(to, from, count * 4);
    return;
  }
  llvm::parallelFor(
      0, llvm::divideCeil(count, kConversionChunk), [&](size_t c) {
        int64_t end = std::min<int64_t>(count, (c + 1) * kConversionChunk);
        for (int64_t e = c * kConversionChunk; e < end; ++e) {
          uint16_t bits;
          std::memcpy(&bits, from + e * 2, 2);
          to[e] = type == DType::BF16 ? ucpBfloatToFloat(bits)
                                      : ucpHalfToFloat(bits);
        }
      });
}

void ucp::convertElements(const char *from, DType fromType, char *to,
                          DType toType, int64_t count) {
  auto isHalfOrSingle = [](DType type) {
    return type == DType::F32 || type == DType::BF16 || type == DType::F16;
  };
  if (fromType == toType) {
    std::memcpy(to, from, count * getElementSize(toType));
  } else if (fromType == DType::F32 && isHalfOrSingle(toType)) {
    narrowFloat32(reinterpret_cast<const float *>(from), count, toType, to);
  } else if (toType == DType::F32 && isHalfOrSingle(fromType)) {
    widenToFloat32(from, count, fromType, reinterpret_cast<float *>(to));
  } else {
    // Any other pair of float types: each element through fp32.
    assert(isHalfOrSingle(toType) && "a conversion narrowFloat32 cannot end");
    int64_t size = getElementSize(fromType);
    for (int64_t e = 0; e < count; ++e) {
      float value = static_cast<float>(readElement(fromType, from + e * size));
      narrowFloat32(&value, 1, toType, to + e * getElementSize(toType));
    }
  }
}

//===- DType.h - Element types of tensor files ------------------*- C++ -*-===//
//
// The element types affine-run moves: copies are bit-exact whatever the type
// (they move bytes); scaling needs arithmetic and is defined for the
// floating-point types.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ELEMENT_DTYPE_H
#define UCP_ELEMENT_DTYPE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ucp {

enum class DType {
  F64,
  F32,
  F16,
  BF16,
  F8E4M3,
  F8E5M2,
  I64,
  I32,
  I16,
  I8,
  U8,
  Bool,
};

/// Every element type, in the order above.
inline constexpr DType kAllDTypes[] = {
    DType::F64,    DType::F32,    DType::F16, DType::BF16,
    DType::F8E4M3, DType::F8E5M2, DType::I64, DType::I32,
    DType::I16,    DType::I8,     DType::U8,  DType::Bool};

/// Returns the size of one element in bytes.
int64_t getElementSize(DType type);

/// Returns the bytes of a tensor of `shape` and `type`, or nothing when an
/// extent is negative or the count overflows int64. Every byte size of a
/// tensor, buffer or file is computed with it.
std::optional<int64_t> getNumBytes(llvm::ArrayRef<int64_t> shape, DType type);

/// Returns the safetensors name ("F32", "BF16", "F8_E4M3", ...).
llvm::StringRef getSafetensorsName(DType type);

/// Parses a safetensors dtype name.
std::optional<DType> parseSafetensorsName(llvm::StringRef name);

/// One name a command line or a Python call may give an element type: the
/// short names (f32, bf16, i8), DeepSpeed's and Hugging Face's (fp32,
/// fp16) and torch's (float32, bfloat16, int8).
struct DTypeSpelling {
  llvm::StringLiteral name;
  DType type;
};

/// Every spelling of every type, the type's canonical name (getDTypeName)
/// first among its own. Every tool and binding parses names through it.
llvm::ArrayRef<DTypeSpelling> getDTypeSpellings();

/// Returns the canonical name: f64, f32, f16, bf16, f8e4m3, f8e5m2, i64,
/// i32, i16, i8, u8, bool.
llvm::StringRef getDTypeName(DType type);

/// What `type` is, in words ("32-bit float"), for option help.
llvm::StringRef getDTypeDescription(DType type);

/// Parses any spelling of getDTypeSpellings, in any case.
std::optional<DType> parseDTypeName(llvm::StringRef name);

/// The spellings of `types`, as "f32 (fp32, float32), bf16 (bfloat16)",
/// for messages that list what is accepted.
std::string describeDTypeNames(llvm::ArrayRef<DType> types);

/// Whether elements of `type` can be multiplied by a scale: the float
/// types, 8-bit ones included.
bool isFloatingPoint(DType type);

/// Whether elements of `type` can be multiplied by `factor` without the
/// factor itself leaving the type: for the float types, |factor| lies in
/// the range of the type's normal numbers (for F32, [2^-126, 2^128)), so
/// that the product of a value of magnitude about 1 neither underflows to
/// zero (1e-300 on F32) nor overflows; for every other type, `factor` is 1.
bool isRepresentableFactor(DType type, double factor);

/// Returns the range of magnitudes `isRepresentableFactor` accepts for a
/// float `type`, as "[1.17549435e-38, 3.40282347e+38]".
std::string describeFactorRange(DType type);

/// Multiplies `count` elements of `type` at `data` (which need not be
/// aligned to the element size) by `factor` in place, rounding to nearest
/// even. For the 16- and 8-bit floats the product is formed in F32, so a
/// power-of-two factor is exact unless it leaves the format's range of
/// normal values (spec §8.3).
void scaleElements(DType type, void *data, int64_t count, double factor);

/// Writes `count` pseudo-random finite elements of `type` to `data`, the
/// same for the same `seed`: floats in [-1, 1), integers over their range.
void writeRandomElements(DType type, void *data, int64_t count, uint64_t seed);

/// Returns the element of `type` at `data` (which need not be aligned) as a
/// double: exact for every floating-point type and for integers up to 2^53.
double readElement(DType type, const void *data);

/// Writes `count` fp32 values of `from` to `to` as `type` (F32, BF16 or
/// F16), rounded to nearest even as torch's `copy_` does, in parallel.
void narrowFloat32(const float *from, int64_t count, DType type, char *to);

/// Writes `count` values of `type` (F32, BF16 or F16) at `from` to `to` as
/// fp32, exactly, in parallel.
void widenToFloat32(const char *from, int64_t count, DType type, float *to);

/// Writes `count` elements of `fromType` at `from` to `to` as `toType`:
/// the same bytes for the same type; else from a floating-point type to F32,
/// BF16 or F16 through fp32, rounded to nearest even as torch's `copy_`
/// does.
void convertElements(const char *from, DType fromType, char *to, DType toType,
                     int64_t count);

} // namespace ucp

#endif // UCP_ELEMENT_DTYPE_H

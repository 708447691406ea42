//===- Crc32.cpp - The CRC-32 zip records, at memory speed ----------------===//

#include "ucp/Formats/Torch/Crc32.h"

#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/Parallel.h"

#include <vector>
#include <zlib.h>

using namespace ucp;

/// ISA-L's CRC-32 (several times zlib's speed), if its library is
/// installed.
using CrcFunction = uint32_t (*)(uint32_t, const unsigned char *, uint64_t);
static CrcFunction getFastCrc32() {
  static const CrcFunction fast = [] {
    llvm::sys::DynamicLibrary library =
        llvm::sys::DynamicLibrary::getPermanentLibrary("libisal.so.2");
    return library.isValid() ? reinterpret_cast<CrcFunction>(
                                   library.getAddressOfSymbol("crc32_gzip_refl"))
                             : nullptr;
  }();
  return fast;
}

uint32_t ucp::computeCrc32(llvm::StringRef bytes) {
  const auto *data = reinterpret_cast<const unsigned char *>(bytes.data());
  if (CrcFunction fast = getFastCrc32())
    return fast(0, data, bytes.size());
  return crc32_z(0, data, bytes.size());
}

uint32_t ucp::combineCrc32(uint32_t first, uint32_t second,
                           uint64_t secondLength) {
  return crc32_combine64(first, second, secondLength);
}

uint32_t ucp::computeCrc32InParallel(llvm::StringRef bytes) {
  constexpr size_t kChunk = size_t(1) << 20;
  size_t chunks = (bytes.size() + kChunk - 1) / kChunk;
  if (chunks <= 1)
    return computeCrc32(bytes);
  std::vector<uint32_t> crcs(chunks);
  llvm::parallelFor(0, chunks, [&](size_t c) {
    crcs[c] = computeCrc32(bytes.substr(c * kChunk, kChunk));
  });
  uint32_t crc = crcs[0];
  for (size_t c = 1; c < chunks; ++c)
    crc = combineCrc32(crc, crcs[c], std::min(kChunk, bytes.size() - c * kChunk));
  return crc;
}

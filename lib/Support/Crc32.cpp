//===- Crc32.cpp - CRC-32s of file bytes, at memory speed -----------------===//

#include "ucp/Support/Crc32.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/MappedFileReader.h"

#include "llvm/ADT/STLExtras.h"
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

llvm::Expected<uint32_t> ucp::computeMappedCrc32(const llvm::MemoryBuffer *buffer,
                                                 llvm::StringRef bytes) {
  constexpr size_t kStripe = size_t(4) << 20, kChunk = size_t(256) << 10;
  size_t stripes = (bytes.size() + kStripe - 1) / kStripe;
  std::vector<uint32_t> crcs(stripes);
  std::vector<std::string> failures(stripes);
  llvm::parallelFor(0, stripes, [&](size_t s) {
    llvm::StringRef stripe = bytes.substr(s * kStripe, kStripe);
    uint32_t crc = 0;
    if (llvm::Error error = readMappedBytes(
            buffer, stripe.data(), stripe.size(), kChunk,
            [&](llvm::StringRef chunk, size_t) {
              crc = combineCrc32(crc, computeCrc32(chunk), chunk.size());
            }))
      failures[s] = llvm::toString(std::move(error));
    crcs[s] = crc;
  });
  for (const std::string &failure : failures)
    if (!failure.empty())
      return makeError(failure);
  uint32_t crc = 0;
  for (size_t s = 0; s < stripes; ++s)
    crc = combineCrc32(crc, crcs[s], std::min(kStripe, bytes.size() - s * kStripe));
  return crc;
}

void RangeCrcs::add(llvm::StringRef path, uint64_t offset, uint64_t length,
                    uint32_t crc) {
  std::lock_guard<std::mutex> lock(mutex);
  ranges[path.str()].push_back({offset, length, crc});
}

void RangeCrcs::addAll(const RangeCrcs &other) {
  std::scoped_lock lock(mutex, other.mutex);
  for (const auto &[path, list] : other.ranges)
    llvm::append_range(ranges[path], list);
}

llvm::Expected<uint32_t> RangeCrcs::compute(const llvm::MemoryBuffer &buffer,
                                            llvm::StringRef bytes) const {
  uint64_t begin = bytes.data() - buffer.getBufferStart();
  uint64_t end = begin + bytes.size();
  std::vector<Range> inside;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = ranges.find(buffer.getBufferIdentifier());
    if (found != ranges.end())
      for (const Range &range : found->second)
        if (range.offset >= begin && range.offset + range.length <= end)
          inside.push_back(range);
  }
  llvm::sort(inside, [](const Range &a, const Range &b) {
    return a.offset < b.offset;
  });
  uint32_t crc = 0;
  uint64_t at = begin;
  auto readUpTo = [&](uint64_t until) -> llvm::Error {
    if (until == at)
      return llvm::Error::success();
    llvm::Expected<uint32_t> gap = computeMappedCrc32(
        &buffer, llvm::StringRef(buffer.getBufferStart() + at, until - at));
    if (!gap)
      return gap.takeError();
    crc = combineCrc32(crc, *gap, until - at);
    at = until;
    return llvm::Error::success();
  };
  for (const Range &range : inside) {
    if (range.offset < at)
      continue; // Overlaps bytes already taken.
    if (llvm::Error error = readUpTo(range.offset))
      return std::move(error);
    crc = combineCrc32(crc, range.crc, range.length);
    at += range.length;
  }
  if (llvm::Error error = readUpTo(end))
    return std::move(error);
  return crc;
}

//===- Crc32.h - CRC-32s of file bytes, at memory speed ---------*- C++ -*-===//
//
// A zip archive records each record's CRC-32 (zlib's polynomial). torch
// neither checks it on load nor lets a flipped bit go unnoticed anywhere
// else, so the writer computes it as it writes and `check` recomputes it:
// over file stripes on parallel threads, combined, with Intel ISA-L's
// carry-less-multiply CRC where Debian's libisal2 is installed (loaded at
// run time, so that nothing built needs it), else zlib's.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_CRC32_H
#define UCP_SUPPORT_CRC32_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ucp {

/// The CRC-32 of `bytes`, on this thread.
uint32_t computeCrc32(llvm::StringRef bytes);

/// The CRC of `first` followed by `secondLength` bytes whose CRC is
/// `second`.
uint32_t combineCrc32(uint32_t first, uint32_t second, uint64_t secondLength);

/// The CRC-32 of `bytes`, inside `buffer`, read from the file it maps
/// (readMappedBytes) in stripes on llvm::parallel's threads, each stripe a
/// cache-sized chunk at a time; an error names the file.
llvm::Expected<uint32_t> computeMappedCrc32(const llvm::MemoryBuffer *buffer,
                                            llvm::StringRef bytes);

/// CRC-32s of byte ranges of files, computed by a pass that read them, so
/// that a later check of the files' records reads only the bytes no pass
/// read: `check` scans every tensor's bytes, and then each byte of a file
/// is read once.
class RangeCrcs {
public:
  /// Records that the bytes [offset, offset + length) of the file `path`
  /// have CRC-32 `crc`. Safe to call from several threads.
  void add(llvm::StringRef path, uint64_t offset, uint64_t length,
           uint32_t crc);
  /// Records every range `other` holds.
  void addAll(const RangeCrcs &other);
  /// The CRC-32 of `bytes`, inside `buffer` (named by the file it maps):
  /// the recorded ranges inside them combined in order, the bytes between
  /// them read (computeMappedCrc32). Ranges that overlap one already
  /// taken are left out (their bytes are read instead).
  llvm::Expected<uint32_t> compute(const llvm::MemoryBuffer &buffer,
                                   llvm::StringRef bytes) const;

private:
  struct Range {
    uint64_t offset, length;
    uint32_t crc;
  };
  mutable std::mutex mutex;
  std::map<std::string, std::vector<Range>, std::less<>> ranges;
};

} // namespace ucp

#endif // UCP_SUPPORT_CRC32_H

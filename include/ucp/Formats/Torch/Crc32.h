//===- Crc32.h - The CRC-32 zip records, at memory speed --------*- C++ -*-===//
//
// A zip archive records each record's CRC-32 (zlib's polynomial). torch
// neither checks it on load nor lets a flipped bit go unnoticed anywhere
// else, so the writer computes it as it writes and `check` recomputes it:
// over 1 MiB chunks on parallel threads, combined, with Intel ISA-L's
// carry-less-multiply CRC where Debian's libisal2 is installed (loaded at
// run time, so that nothing built needs it), else zlib's.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_TORCH_CRC32_H
#define UCP_FORMATS_TORCH_CRC32_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace ucp {

/// The CRC-32 of `bytes`, on this thread.
uint32_t computeCrc32(llvm::StringRef bytes);

/// The CRC of `first` followed by `secondLength` bytes whose CRC is
/// `second`.
uint32_t combineCrc32(uint32_t first, uint32_t second, uint64_t secondLength);

/// The CRC-32 of `bytes`, its 1 MiB chunks on llvm::parallel's threads.
uint32_t computeCrc32InParallel(llvm::StringRef bytes);

} // namespace ucp

#endif // UCP_FORMATS_TORCH_CRC32_H

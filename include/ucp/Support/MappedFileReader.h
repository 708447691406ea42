//===- MappedFileReader.h - Mapped bytes read from their file --*- C++ -*-===//
//
// Readers map their files (readInputFile) and hand out pointers into the
// mapping. A pass that reads every byte once (a check of a whole
// checkpoint) reads those bytes faster from the file itself: pread into a
// buffer that stays in the cache streams the kernel's copy, where the
// first touch of each 4 KiB mapped page is a fault and a cold miss (on a
// virtual machine, several times the copy), and no page enters this
// process's memory.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_MAPPEDFILEREADER_H
#define UCP_SUPPORT_MAPPEDFILEREADER_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <utility>

namespace ucp {

/// Reads bytes of a buffer from the file it maps.
class MappedFileReader {
public:
  /// A reader of `buffer`'s bytes: from its file where it maps one (opened
  /// here by the buffer's name, and refused, naming it, where the file is
  /// no longer the size mapped), from memory where it does not (null, or
  /// bytes read into memory).
  static llvm::Expected<MappedFileReader>
  open(const llvm::MemoryBuffer *buffer);
  MappedFileReader(MappedFileReader &&other)
      : buffer(other.buffer),
        file(std::exchange(other.file, llvm::sys::fs::kInvalidFile)) {}
  MappedFileReader &operator=(MappedFileReader &&) = delete;
  ~MappedFileReader();

  /// The `bytes` bytes at `begin`, inside the buffer: read from the file
  /// into `into` (room for `bytes`), or `begin` itself from memory. An
  /// error names the file and the bytes.
  llvm::Expected<llvm::StringRef> read(const char *begin, size_t bytes,
                                       char *into) const;

private:
  MappedFileReader(const llvm::MemoryBuffer *buffer,
                   llvm::sys::fs::file_t file)
      : buffer(buffer), file(file) {}

  const llvm::MemoryBuffer *buffer;
  /// The file, or kInvalidFile to read from memory.
  llvm::sys::fs::file_t file;
};

/// Calls `consume(chunk, offset)` on the bytes [begin, begin + bytes) of
/// `buffer` in order, `chunkBytes` at a time (the last chunk may be
/// shorter), `offset` counted from `begin`, read by a MappedFileReader into
/// one buffer of `chunkBytes`.
llvm::Error
readMappedBytes(const llvm::MemoryBuffer *buffer, const char *begin,
                size_t bytes, size_t chunkBytes,
                llvm::function_ref<void(llvm::StringRef chunk, size_t offset)>
                    consume);

} // namespace ucp

#endif // UCP_SUPPORT_MAPPEDFILEREADER_H

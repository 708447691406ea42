//===- MappedOutputFile.h - An output written through a mapping -*- C++ -*-===//
//
// Large outputs (shard files, checkpoint tensors) are written in place by
// executors, so the file is sized first and mapped writable: an OutputFile
// (temporary name, committed by rename) whose blocks are reserved up front,
// so that a full disk is an error at creation rather than SIGBUS halfway.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_MAPPEDOUTPUTFILE_H
#define UCP_SUPPORT_MAPPEDOUTPUTFILE_H

#include "ucp/Support/OutputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

namespace ucp {

/// A file of fixed size being written through a writable mapping (into a
/// device or pipe, through memory, written in order when flushed).
class MappedOutputFile {
public:
  /// Creates the temporary file for `path` at `size` bytes and maps it.
  /// Refuses standard output (a mapping needs a file).
  static llvm::Expected<std::unique_ptr<MappedOutputFile>>
  create(llvm::StringRef path, uint64_t size);
  ~MappedOutputFile();

  /// The mapped bytes; null once flushed.
  char *getData() {
    return region   ? region->data()
           : buffer ? buffer->getBufferStart()
                    : nullptr;
  }
  uint64_t getSize() const { return size; }
  llvm::StringRef getPath() const { return output->getPath(); }

  /// Writes the data back and unmaps the file. With `durable`, returns only
  /// once the data is on disk (msync), so that a crash after the rename
  /// cannot leave a file of zeros under the final name.
  llvm::Error flush(bool durable);
  /// Flushes the file (without waiting for the disk) unless flush() did,
  /// and renames it to its final path.
  llvm::Error commit();

private:
  MappedOutputFile() = default;
  std::unique_ptr<OutputFile> output;
  std::unique_ptr<llvm::sys::fs::mapped_file_region> region;
  /// For a device or pipe, which cannot be mapped: the bytes, in memory.
  std::unique_ptr<llvm::WritableMemoryBuffer> buffer;
  uint64_t size = 0;
};

} // namespace ucp

#endif // UCP_SUPPORT_MAPPEDOUTPUTFILE_H

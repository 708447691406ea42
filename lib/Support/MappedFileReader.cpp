//===- MappedFileReader.cpp - Mapped bytes read from their file -----------===//

#include "ucp/Support/MappedFileReader.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/FileSystem.h"

#include <vector>

using namespace ucp;
namespace fs = llvm::sys::fs;

llvm::Expected<MappedFileReader>
MappedFileReader::open(const llvm::MemoryBuffer *buffer) {
  if (!buffer ||
      buffer->getBufferKind() != llvm::MemoryBuffer::MemoryBuffer_MMap)
    return MappedFileReader(buffer, fs::kInvalidFile);
  llvm::StringRef path = buffer->getBufferIdentifier();
  llvm::Expected<fs::file_t> file = fs::openNativeFileForRead(path);
  if (!file)
    return makeError(path, "cannot read: " + llvm::toString(file.takeError()));
  MappedFileReader reader(buffer, *file);
  fs::file_status status;
  if (fs::status(*file, status) || status.getSize() != buffer->getBufferSize())
    return makeError(path, "changed while it was read: it is no longer the "
                           "size it was when opened");
  return std::move(reader);
}

MappedFileReader::~MappedFileReader() {
  if (file != fs::kInvalidFile)
    fs::closeFile(file);
}

llvm::Expected<llvm::StringRef>
MappedFileReader::read(const char *begin, size_t bytes, char *into) const {
  if (file == fs::kInvalidFile)
    return llvm::StringRef(begin, bytes);
  assert(buffer && begin >= buffer->getBufferStart() &&
         begin + bytes <= buffer->getBufferEnd() && "bytes outside the file");
  uint64_t at = begin - buffer->getBufferStart();
  for (size_t filled = 0; filled < bytes;) { // However the reads return.
    llvm::Expected<size_t> got = fs::readNativeFileSlice(
        file, llvm::MutableArrayRef<char>(into + filled, bytes - filled),
        at + filled);
    if (!got || *got == 0)
      return makeError(buffer->getBufferIdentifier(),
                       "cannot read bytes " + std::to_string(at + filled) +
                           " to " + std::to_string(at + bytes) + ": " +
                           (got ? "the file ends before them"
                                : llvm::toString(got.takeError())));
    filled += *got;
  }
  return llvm::StringRef(into, bytes);
}

llvm::Error ucp::readMappedBytes(
    const llvm::MemoryBuffer *buffer, const char *begin, size_t bytes,
    size_t chunkBytes,
    llvm::function_ref<void(llvm::StringRef chunk, size_t offset)> consume) {
  assert(chunkBytes > 0 && "chunks of no bytes");
  llvm::Expected<MappedFileReader> reader = MappedFileReader::open(buffer);
  if (!reader)
    return reader.takeError();
  std::vector<char> chunk(std::min(chunkBytes, bytes));
  for (size_t done = 0; done < bytes; done += chunkBytes) {
    llvm::Expected<llvm::StringRef> read = reader->read(
        begin + done, std::min(chunkBytes, bytes - done), chunk.data());
    if (!read)
      return read.takeError();
    consume(*read, done);
  }
  return llvm::Error::success();
}

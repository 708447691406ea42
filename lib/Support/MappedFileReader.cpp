//===- MappedFileReader.cpp - Mapped bytes read from their file -----------===//

#include "ucp/Support/MappedFileReader.h"
#include "ucp/Support/Error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace ucp;

llvm::Expected<MappedFileReader>
MappedFileReader::open(const llvm::MemoryBuffer *buffer) {
  if (!buffer ||
      buffer->getBufferKind() != llvm::MemoryBuffer::MemoryBuffer_MMap)
    return MappedFileReader(buffer, -1);
  llvm::StringRef path = buffer->getBufferIdentifier();
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeError(path, std::string("cannot read: ") + std::strerror(errno));
  MappedFileReader reader(buffer, fd);
  struct stat status;
  if (::fstat(fd, &status) != 0 ||
      uint64_t(status.st_size) != buffer->getBufferSize())
    return makeError(path, "changed while it was read: it is no longer the "
                           "size it was when opened");
  return std::move(reader);
}

MappedFileReader::~MappedFileReader() {
  if (fd >= 0)
    ::close(fd);
}

llvm::Expected<llvm::StringRef>
MappedFileReader::read(const char *begin, size_t bytes, char *into) const {
  if (fd < 0)
    return llvm::StringRef(begin, bytes);
  assert(buffer && begin >= buffer->getBufferStart() &&
         begin + bytes <= buffer->getBufferEnd() && "bytes outside the file");
  uint64_t at = begin - buffer->getBufferStart();
  for (size_t filled = 0; filled < bytes;) { // However the reads return.
    ssize_t got = ::pread(fd, into + filled, bytes - filled, at + filled);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return makeError(buffer->getBufferIdentifier(),
                       "cannot read bytes " + std::to_string(at + filled) +
                           " to " + std::to_string(at + bytes) + ": " +
                           (got < 0 ? std::strerror(errno)
                                    : "the file ends before them"));
    filled += size_t(got);
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

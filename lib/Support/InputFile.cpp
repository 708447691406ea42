//===- InputFile.cpp - Reading the tools' inputs safely -------------------===//

#include "ucp/Support/InputFile.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Process.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace ucp;

const char *ucp::describeFileKind(unsigned mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISLNK(mode))
    return "a symbolic link";
  return "not a regular file";
}

/// Reads standard input up to kMaxStandardInputBytes.
static llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readStandardInput(const InputOptions &options) {
  llvm::SmallString<0> bytes;
  char chunk[1 << 16];
  while (true) {
    ssize_t got = ::read(STDIN_FILENO, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return makeError("<stdin>",
                       std::string("cannot read: ") + std::strerror(errno));
    if (got == 0)
      break;
    if (static_cast<int64_t>(bytes.size()) + got > kMaxStandardInputBytes)
      return makeError("<stdin>", "standard input holds more than " +
                                      std::to_string(kMaxStandardInputBytes) +
                                      " bytes; give a file instead");
    bytes.append(chunk, chunk + got);
  }
  // Such a buffer is NUL-terminated too, whatever `options` ask.
  std::unique_ptr<llvm::WritableMemoryBuffer> buffer =
      llvm::WritableMemoryBuffer::getNewUninitMemBuffer(bytes.size(), "<stdin>",
                                                        options.alignment);
  if (!buffer)
    return makeError("<stdin>", "out of memory");
  std::copy(bytes.begin(), bytes.end(), buffer->getBufferStart());
  return std::move(buffer);
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
ucp::readInputFile(llvm::StringRef path, const InputOptions &options) {
  if (path == "-")
    return readStandardInput(options);
  // Opened without blocking, so that a FIFO with no writer is refused
  // rather than waited on; then checked on the descriptor, so that nothing
  // can swap the file between the check and the read.
  llvm::SmallString<256> nullTerminatedPath(path);
  int fd =
      ::open(nullTerminatedPath.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return makeError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat status;
  if (::fstat(fd, &status) != 0) {
    int error = errno;
    ::close(fd);
    return makeError(path, std::string("cannot stat: ") + std::strerror(error));
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    return makeError(path, std::string("is ") +
                               describeFileKind(status.st_mode) +
                               ", not a regular file; inputs must be regular "
                               "files, or '-' for standard input");
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getOpenFile(
          llvm::sys::fs::convertFDToNativeFile(fd), path, status.st_size,
          options.nullTerminated, /*IsVolatile=*/false, options.alignment);
  ::close(fd);
  if (!buffer)
    return makeError(path, "cannot read: " + buffer.getError().message());
  return std::move(*buffer);
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
ucp::readTextInputFile(llvm::StringRef path, TextSyntax syntax) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> text =
      readInputFile(path);
  if (!text)
    return text.takeError();
  if (llvm::Error error = checkNestingDepth((*text)->getBuffer(), syntax))
    return makeError(path == "-" ? "<stdin>" : path,
                     llvm::toString(std::move(error)));
  return text;
}

void ucp::releaseMappedPages(const llvm::MemoryBuffer &buffer,
                             const char *begin, size_t bytes) {
  if (buffer.getBufferKind() != llvm::MemoryBuffer::MemoryBuffer_MMap)
    return;
  // Only this buffer's pages: anything else may be memory of the heap.
  const char *end = std::min(begin + bytes, buffer.getBufferEnd());
  begin = std::max(begin, buffer.getBufferStart());
  if (begin >= end)
    return;
  bytes = end - begin;
  uintptr_t page = llvm::sys::Process::getPageSizeEstimate();
  uintptr_t first = llvm::alignTo(reinterpret_cast<uintptr_t>(begin), page);
  uintptr_t last =
      llvm::alignDown(reinterpret_cast<uintptr_t>(begin) + bytes, page);
  if (first < last)
    (void)::madvise(reinterpret_cast<void *>(first), last - first,
                    MADV_DONTNEED);
}

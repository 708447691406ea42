//===- MappedOutputFile.cpp - An output written through a mapping ---------===//

#include "ucp/Support/MappedOutputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>

using namespace ucp;
namespace fs = llvm::sys::fs;

static llvm::Error refuse(llvm::StringRef path, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + why.str());
}

/// Allocates the blocks of the first `size` bytes of `fd` where the file
/// system can: a file written through a mapping that runs out of space
/// would otherwise end the process with SIGBUS in the middle of the run.
static std::error_code reserveBlocks(int fd, uint64_t size) {
#if defined(__linux__)
  if (::fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0 &&
      errno != EOPNOTSUPP && errno != ENOSYS)
    return std::error_code(errno, std::generic_category());
#endif
  return {};
}

llvm::Expected<std::unique_ptr<MappedOutputFile>>
MappedOutputFile::create(llvm::StringRef path, uint64_t size) {
  auto file = std::unique_ptr<MappedOutputFile>(new MappedOutputFile());
  llvm::Expected<std::unique_ptr<OutputFile>> output = OutputFile::create(path);
  if (!output)
    return output.takeError();
  if ((*output)->isStandardOutput())
    return refuse(path, "this file is written through a mapping, so it "
                        "needs a file, not standard output");
  file->output = std::move(*output);
  file->size = size;
  int fd = file->output->getDescriptor();
  std::string failed;
  std::error_code ec = fs::resize_file(fd, size);
  if (ec)
    failed = "cannot size the output";
  if (!ec && (ec = reserveBlocks(fd, size)))
    failed = "cannot reserve " + std::to_string(size) + " bytes for the output";
  if (!ec && size > 0) {
    file->region = std::make_unique<fs::mapped_file_region>(
        fs::convertFDToNativeFile(fd), fs::mapped_file_region::readwrite, size,
        0, ec);
    if (ec)
      failed = "cannot map the output";
  }
  if (ec)
    return refuse(path, failed + ": " + ec.message());
  return file;
}

MappedOutputFile::~MappedOutputFile() {
  // Unmapped before the output, uncommitted, removes its file.
  region.reset();
}

llvm::Error MappedOutputFile::flush(bool durable) {
  if (!region)
    return llvm::Error::success();
  if (durable && ::msync(region->data(), region->size(), MS_SYNC) != 0)
    return refuse(getPath(), std::string("cannot write the output to disk: ") +
                                 std::strerror(errno));
  region.reset(); // Unmaps; the page cache writes the pages back.
  return llvm::Error::success();
}

llvm::Error MappedOutputFile::commit() {
  if (llvm::Error error = flush(/*durable=*/false))
    return error;
  return output->commit();
}

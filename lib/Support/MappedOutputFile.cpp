//===- MappedOutputFile.cpp - An output written through a mapping ---------===//

#include "ucp/Support/MappedOutputFile.h"
#include "ucp/Support/Error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>

using namespace ucp;
namespace fs = llvm::sys::fs;

llvm::Expected<std::unique_ptr<MappedOutputFile>>
MappedOutputFile::create(llvm::StringRef path, uint64_t size) {
  auto file = std::unique_ptr<MappedOutputFile>(new MappedOutputFile());
  llvm::Expected<std::unique_ptr<OutputFile>> output = OutputFile::create(path);
  if (!output)
    return output.takeError();
  if ((*output)->isStandardOutput())
    return makeError(path, "this file is written through a mapping, so it "
                           "needs a file, not standard output");
  file->output = std::move(*output);
  file->size = size;
  if (file->output->isDirect()) {
    // A device or pipe cannot be mapped: the bytes are gathered in memory
    // and written in order when flushed.
    file->buffer = llvm::WritableMemoryBuffer::getNewUninitMemBuffer(size);
    if (!file->buffer)
      return makeError(path, "cannot allocate " + std::to_string(size) +
                                 " bytes to gather the output in");
    return file;
  }
  if (llvm::Error error = file->output->reserve(size))
    return std::move(error);
  if (size > 0) {
    std::error_code ec;
    file->region = std::make_unique<fs::mapped_file_region>(
        fs::convertFDToNativeFile(file->output->getDescriptor()),
        fs::mapped_file_region::readwrite, size, 0, ec);
    if (ec)
      return makeError(path, "cannot map the output: " + ec.message());
  }
  return file;
}

MappedOutputFile::~MappedOutputFile() {
  // Unmapped before the output, uncommitted, removes its file.
  region.reset();
}

llvm::Error MappedOutputFile::flush(bool durable) {
  if (buffer) {
    llvm::StringRef bytes(buffer->getBufferStart(), buffer->getBufferSize());
    llvm::Error error = output->writeAt(0, bytes);
    buffer.reset();
    return error;
  }
  if (!region)
    return llvm::Error::success();
  if (durable && ::msync(region->data(), region->size(), MS_SYNC) != 0)
    return makeError(getPath(),
                     std::string("cannot write the output to disk: ") +
                         std::strerror(errno));
  region.reset(); // Unmaps; the page cache writes the pages back.
  return llvm::Error::success();
}

llvm::Error MappedOutputFile::commit() {
  if (llvm::Error error = flush(/*durable=*/false))
    return error;
  return output->commit();
}

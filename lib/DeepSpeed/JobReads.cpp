//===- JobReads.cpp - The bytes of its input a job reads ------------------===//

#include "JobReads.h"

using namespace ucp;

void ucp::addFileRead(const llvm::MemoryBuffer &file,
                      std::vector<FileBytes> &reads) {
  reads.push_back({file.getBufferIdentifier().str(), 0,
                   static_cast<int64_t>(file.getBufferSize())});
}

void ucp::addStorageRead(const TorchFile &source, llvm::StringRef key,
                         std::vector<FileBytes> &reads) {
  std::optional<llvm::StringRef> bytes = source.getStorageBytes(key);
  if (!bytes)
    return;
  const llvm::MemoryBuffer &file = source.getBuffer();
  reads.push_back({file.getBufferIdentifier().str(),
                   bytes->data() - file.getBufferStart(),
                   static_cast<int64_t>(bytes->size())});
}

void ucp::addCopiedReads(const TorchFile &source,
                         const PickleDocument &document,
                         std::vector<FileBytes> &reads) {
  const llvm::MemoryBuffer &file = source.getBuffer();
  for (llvm::StringRef bytes : source.getStoragesOf(document))
    reads.push_back({file.getBufferIdentifier().str(),
                     bytes.data() - file.getBufferStart(),
                     static_cast<int64_t>(bytes.size())});
}

//===- TorchFile.h - Reading torch.save files without torch -----*- C++ -*-===//
//
// A `.pt` file as torch.load sees it, read safely: the zip container
// (TorchArchive), its pickle read by the restricted unpickler (Pickle.h),
// and every tensor a view into the memory-mapped record of its storage:
// nothing is copied, storage offsets and strides are honoured, and tensors
// sharing a storage (ZeRO-1/2 model states hold each parameter group as one
// flat storage) share its bytes.
//
// At open, every storage the pickle names must be a record of the archive
// holding exactly its elements, and every tensor must lie inside its
// storage; a `byteorder` record, where present (torch 2), must say
// "little".
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_TORCH_TORCHFILE_H
#define UCP_FORMATS_TORCH_TORCHFILE_H

#include "ucp/Formats/Torch/Pickle.h"
#include "ucp/Formats/Torch/TorchArchive.h"
#include "ucp/Support/InputFile.h"

namespace ucp {

/// The bytes of one tensor.
struct TensorData {
  DType dtype = DType::F32;
  Extents shape;
  /// In elements.
  Extents strides;
  /// The tensor's first element (its storage offset applied).
  const char *data = nullptr;
};

/// A torch.save file opened for reading.
class TorchFile {
public:
  /// Opens and validates `path`; errors name the file.
  static llvm::Expected<std::unique_ptr<TorchFile>> open(llvm::StringRef path);
  /// Validates the file held by `file` (named by its identifier).
  static llvm::Expected<std::unique_ptr<TorchFile>>
  parse(std::unique_ptr<llvm::MemoryBuffer> file);

  const PickleDocument &getDocument() const { return document; }
  /// The tensor `tensor` (a Tensor value of the document).
  TensorData getTensor(PickleRef tensor) const;
  llvm::StringRef getPath() const { return archive->getPath(); }
  /// The bytes of the file, mapped where large.
  const llvm::MemoryBuffer &getBuffer() const { return archive->getBuffer(); }
  /// Drops the pages wholly inside [begin, begin + bytes) from memory
  /// (releaseMappedPages): done reading them for now.
  void releasePages(const char *begin, size_t bytes) const {
    releaseMappedPages(archive->getBuffer(), begin, bytes);
  }
  /// The bytes of the storage keyed `key`, if the document has one.
  std::optional<llvm::StringRef> getStorageBytes(llvm::StringRef key) const {
    return archive->getRecord("data/" + key.str());
  }
  /// The bytes of each of this file's storages that `document` references
  /// (what TorchFileWriter::copyStoragesFrom reads from it).
  std::vector<llvm::StringRef>
  getStoragesOf(const PickleDocument &document) const;

private:
  TorchFile() = default;
  llvm::Error checkStorages();

  std::unique_ptr<TorchArchive> archive;
  PickleDocument document;
};

} // namespace ucp

#endif // UCP_FORMATS_TORCH_TORCHFILE_H

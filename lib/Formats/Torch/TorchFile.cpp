//===- TorchFile.cpp - Reading torch.save files without torch -------------===//

#include "ucp/Formats/Torch/TorchFile.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"

#include <set>

using namespace ucp;
using llvm::Error;
using llvm::Expected;

Error TorchFile::checkStorages() {
  llvm::StringRef path = archive->getPath();
  for (PickleRef ref = 0; ref < document.size(); ++ref) {
    const PickleValue &value = document.get(ref);
    if (value.kind != PickleValue::Storage)
      continue;
    std::optional<llvm::StringRef> record =
        archive->getRecord("data/" + value.text);
    if (!record)
      return makeError(path, "storage '" + value.text +
                                 "' has no record data/" + value.text);
    std::optional<int64_t> bytes = getNumBytes({value.elements}, value.dtype);
    if (!bytes || uint64_t(*bytes) != record->size())
      return makeError(path, "storage '" + value.text + "' of " +
                                 std::to_string(value.elements) + " " +
                                 getSafetensorsName(value.dtype) +
                                 " elements has a record of " +
                                 std::to_string(record->size()) + " bytes");
  }
  return Error::success();
}

Expected<std::unique_ptr<TorchFile>>
TorchFile::parse(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  llvm::StringRef path = buffer->getBufferIdentifier();
  auto file = std::unique_ptr<TorchFile>(new TorchFile());
  std::string name = path.str();
  Expected<std::unique_ptr<TorchArchive>> archive =
      TorchArchive::parse(std::move(buffer));
  if (!archive)
    return archive.takeError();
  file->archive = std::move(*archive);
  if (std::optional<llvm::StringRef> order =
          file->archive->getRecord("byteorder");
      order && order->trim() != "little")
    return makeError(name, "the tensors are stored " + order->trim() +
                               "-endian; this reader reads little-endian ones");
  std::optional<llvm::StringRef> pickle = file->archive->getRecord("data.pkl");
  if (!pickle)
    return makeError(name, "no record data.pkl: not a torch.save file");
  Expected<PickleDocument> document = readPickle(*pickle);
  if (!document)
    return makeError(name, "data.pkl: " + llvm::toString(document.takeError()));
  file->document = std::move(*document);
  if (Error error = file->checkStorages())
    return std::move(error);
  return file;
}

Expected<std::unique_ptr<TorchFile>> TorchFile::open(llvm::StringRef path) {
  Expected<std::unique_ptr<llvm::MemoryBuffer>> file =
      readInputFile(path, {/*nullTerminated=*/false, llvm::Align(64)});
  if (!file)
    return file.takeError();
  return parse(std::move(*file));
}

std::vector<llvm::StringRef>
TorchFile::getStoragesOf(const PickleDocument &document) const {
  std::vector<llvm::StringRef> storages;
  std::set<std::string> seen;
  for (PickleRef ref = 0; ref < document.size(); ++ref) {
    const PickleValue &value = document.get(ref);
    if (value.kind == PickleValue::Storage && seen.insert(value.text).second)
      if (std::optional<llvm::StringRef> bytes = getStorageBytes(value.text))
        storages.push_back(*bytes);
  }
  return storages;
}

TensorData TorchFile::getTensor(PickleRef ref) const {
  const PickleValue &tensor = document.get(ref);
  const PickleValue &storage = document.get(tensor.storage);
  llvm::StringRef record = *archive->getRecord("data/" + storage.text);
  return {storage.dtype, tensor.shape, tensor.strides,
          record.data() + tensor.offset * getElementSize(storage.dtype)};
}

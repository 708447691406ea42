//===- TorchFileWriter.h - Writing torch.save files -------------*- C++ -*-===//
//
// A torch.save file in the form torch 1.13 writes, which every torch since
// 1.6 loads: a zip archive of stored records under one root folder,
// `data.pkl` (the pickle), `data/<key>` per storage (in string order) and
// `version`, each record's data on a 64-byte boundary; zip64 records only
// when an offset or size needs them. The layout is fixed and the file
// reserved at its full size up front; storages are then written with
// pwrite, whole or as pieces in order (straight from a mapped input, with
// no copy in between), each record's CRC computed as it is written, and
// commit() writes the headers and renames the file into place. Writing
// with pwrite rather than through a mapping of the output spares a page
// fault per page written: three times faster on gigabytes.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_TORCH_TORCHFILEWRITER_H
#define UCP_FORMATS_TORCH_TORCHFILEWRITER_H

#include "ucp/Formats/Torch/Pickle.h"
#include "ucp/Formats/Torch/TorchFile.h"
#include "ucp/Support/OutputFile.h"

#include "llvm/ADT/StringMap.h"

namespace ucp {

/// A torch.save file being written.
class TorchFileWriter {
public:
  /// Lays out `path` for `document`: its pickle and one record per storage
  /// it holds (each key once). The root folder is the file's name without
  /// its extension, as torch 1.13 names it.
  static llvm::Expected<std::unique_ptr<TorchFileWriter>>
  create(llvm::StringRef path, const PickleDocument &document);

  /// Writes the bytes of storage `key`: `pieces` one after the other, all
  /// of the record. Each storage is written once. `written`, if given, is
  /// called with each chunk (a megabyte or so) once it is in the file: a
  /// mapped input can drop those pages then.
  llvm::Error
  writeStorage(llvm::StringRef key, llvm::ArrayRef<llvm::StringRef> pieces,
               llvm::function_ref<void(llvm::StringRef)> written = {});
  /// The same with `count` pieces made one at a time: `piece(i)` is
  /// written before `piece(i + 1)` is asked for, so that one buffer can
  /// hold each in turn.
  llvm::Error
  writeStorage(llvm::StringRef key, size_t count,
               llvm::function_ref<llvm::StringRef(size_t)> piece,
               llvm::function_ref<void(llvm::StringRef)> written = {});
  /// Writes every storage not yet written with the bytes of the storage of
  /// the same key in `source` (a document copied from source's by
  /// PickleBuilder::copy).
  llvm::Error copyStoragesFrom(const TorchFile &source);
  /// Writes the headers and the directory, and renames the file into
  /// place; with `durable`, once its data is on disk. Every storage must
  /// have been written.
  llvm::Error commit(bool durable);

  struct Record {
    std::string name;
    uint64_t headerOffset = 0, dataOffset = 0, size = 0;
    /// Set once the record's data is written.
    std::optional<uint32_t> crc;
  };

private:
  TorchFileWriter() = default;
  llvm::Error writeRecord(Record &record, size_t count,
                          llvm::function_ref<llvm::StringRef(size_t)> piece,
                          llvm::function_ref<void(llvm::StringRef)> written);
  llvm::Error writeRecord(Record &record,
                          llvm::ArrayRef<llvm::StringRef> pieces,
                          llvm::function_ref<void(llvm::StringRef)> written);
  std::string getLocalHeader(const Record &record) const;
  std::string getDirectory() const;

  std::unique_ptr<OutputFile> output;
  std::vector<Record> records;
  llvm::StringMap<size_t> storageRecords;
  uint64_t directoryOffset = 0, fileSize = 0;
  bool zip64 = false;
};

} // namespace ucp

#endif // UCP_FORMATS_TORCH_TORCHFILEWRITER_H

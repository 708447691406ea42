//===- TorchFileWriter.h - Writing torch.save files -------------*- C++ -*-===//
//
// A torch.save file in the form torch 1.13 writes, which every torch since
// 1.6 loads: a zip archive of stored records under one root folder,
// `data.pkl` (the pickle), `data/<key>` per storage (in string order) and
// `version`, each record's data on a 64-byte boundary; zip64 records only
// when an offset or size needs them. The file is sized and mapped up front
// (MappedOutputFile) so that executors write storages in place; commit()
// then computes the CRCs, writes the headers and renames the file into
// place.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_IO_TORCHFILEWRITER_H
#define UCP_IO_TORCHFILEWRITER_H

#include "ucp/IO/Pickle.h"
#include "ucp/IO/TorchFile.h"
#include "ucp/Support/MappedOutputFile.h"

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

  /// Where the bytes of storage `key` go, or null if there is none.
  char *getStorageData(llvm::StringRef key);
  /// Fills every storage with the bytes of the storage of the same key in
  /// `source` (a document copied from source's by PickleBuilder::copy).
  llvm::Error copyStoragesFrom(const TorchFile &source);
  /// Computes the CRCs of the records, writes the headers and the
  /// directory, and renames the file into place; with `durable`, once its
  /// data is on disk.
  llvm::Error commit(bool durable);

  struct Record {
    std::string name;
    uint64_t headerOffset = 0, dataOffset = 0, size = 0;
  };

private:
  TorchFileWriter() = default;
  void writeLocalHeader(const Record &record, uint32_t crc);
  void writeDirectory(llvm::ArrayRef<uint32_t> crcs);
  void writeDirectoryEnd();
  std::unique_ptr<MappedOutputFile> output;
  std::vector<Record> records;
  llvm::StringMap<size_t> storageRecords;
  uint64_t directoryOffset = 0;
  bool zip64 = false;
};

} // namespace ucp

#endif // UCP_IO_TORCHFILEWRITER_H

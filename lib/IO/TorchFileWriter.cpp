//===- TorchFileWriter.cpp - Writing torch.save files ---------------------===//
//
// The layout is fixed before any byte is written: record by record, a
// local header padded (extra field 0x4246, as torch pads) so that the data
// starts on a 64-byte boundary, then the central directory and its end.
// Headers carry CRCs, so they are written last, once the data is in place.
//
//===----------------------------------------------------------------------===//

#include "ucp/IO/TorchFileWriter.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"

#include <zlib.h>

#include <cstring>
#include <map>

using namespace ucp;
using llvm::Expected;
using llvm::StringRef;

namespace {

constexpr uint64_t kAlignment = 64;
constexpr uint64_t kLocalHeaderSize = 30, kCentralHeaderSize = 46,
                   kEndSize = 22, kEnd64Size = 56, kLocatorSize = 20;
/// The zip64 extra fields: sizes (local), sizes and offset (central).
constexpr uint64_t kLocalZip64Extra = 4 + 16, kCentralZip64Extra = 4 + 24;
constexpr uint64_t kPaddingExtra = 4;
constexpr uint64_t kLimit32 = 0xFFFFFFFF;
/// DOS date 1980-01-01, the earliest a zip can say (torch says the same).
constexpr uint16_t kDosDate = 0x21;
/// Bit 11: names are UTF-8.
constexpr uint16_t kUtf8Names = 0x0800;

/// Little-endian writes at a cursor.
class Writer {
public:
  explicit Writer(char *at) : at(at) {}
  template <typename T> void put(T value) {
    llvm::support::endian::write<T, llvm::endianness::little>(at, value);
    at += sizeof(T);
  }
  void bytes(StringRef data) {
    std::memcpy(at, data.data(), data.size());
    at += data.size();
  }
  void fill(char value, uint64_t count) {
    std::memset(at, value, count);
    at += count;
  }

private:
  char *at;
};

/// Lays out `records` (sizes set) with or without zip64 records; returns
/// the file's size.
uint64_t layOut(std::vector<TorchFileWriter::Record> &records, bool zip64,
                uint64_t &directoryOffset) {
  uint64_t offset = 0;
  for (TorchFileWriter::Record &record : records) {
    record.headerOffset = offset;
    uint64_t fixed = kLocalHeaderSize + record.name.size() +
                     (zip64 ? kLocalZip64Extra : 0) + kPaddingExtra;
    record.dataOffset = llvm::alignTo(offset + fixed, kAlignment);
    offset = record.dataOffset + record.size;
  }
  directoryOffset = offset;
  for (const TorchFileWriter::Record &record : records)
    offset += kCentralHeaderSize + record.name.size() +
              (zip64 ? kCentralZip64Extra : 0);
  return offset + (zip64 ? kEnd64Size + kLocatorSize : 0) + kEndSize;
}

} // namespace

Expected<std::unique_ptr<TorchFileWriter>>
TorchFileWriter::create(StringRef path, const PickleDocument &document) {
  auto refuse = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + why.str());
  };
  Expected<std::string> pickle = writePickle(document);
  if (!pickle)
    return refuse(llvm::toString(pickle.takeError()));
  auto writer = std::unique_ptr<TorchFileWriter>(new TorchFileWriter());
  std::string root = llvm::sys::path::stem(path).str();
  // The storages, each once, in string order of their keys (as torch).
  std::map<std::string, uint64_t> storages;
  for (PickleRef ref = 0; ref < document.size(); ++ref) {
    const PickleValue &value = document.get(ref);
    if (value.kind != PickleValue::Storage)
      continue;
    std::optional<int64_t> bytes = getNumBytes({value.elements}, value.dtype);
    if (!bytes)
      return refuse("storage '" + value.text + "' holds more bytes than " +
                    "int64 counts");
    auto [it, inserted] = storages.try_emplace(value.text, *bytes);
    if (!inserted && it->second != uint64_t(*bytes))
      return refuse("two storages are keyed '" + value.text + "'");
  }
  writer->records.push_back({root + "/data.pkl", 0, 0, pickle->size()});
  for (const auto &[key, bytes] : storages) {
    writer->storageRecords[key] = writer->records.size();
    writer->records.push_back({root + "/data/" + key, 0, 0, bytes});
  }
  writer->records.push_back({root + "/version", 0, 0, 2});
  uint64_t size = layOut(writer->records, false, writer->directoryOffset);
  if (size >= kLimit32 || writer->records.size() >= 0xFFFF) {
    writer->zip64 = true;
    size = layOut(writer->records, true, writer->directoryOffset);
  }
  Expected<std::unique_ptr<MappedOutputFile>> output =
      MappedOutputFile::create(path, size);
  if (!output)
    return output.takeError();
  writer->output = std::move(*output);
  char *base = writer->output->getData();
  std::memcpy(base + writer->records.front().dataOffset, pickle->data(),
              pickle->size());
  std::memcpy(base + writer->records.back().dataOffset, "3\n", 2);
  return writer;
}

char *TorchFileWriter::getStorageData(StringRef key) {
  auto it = storageRecords.find(key);
  if (it == storageRecords.end())
    return nullptr;
  return output->getData() + records[it->second].dataOffset;
}

llvm::Error TorchFileWriter::copyStoragesFrom(const TorchFile &source) {
  for (const auto &entry : storageRecords) {
    const Record &record = records[entry.second];
    std::optional<StringRef> bytes = source.getStorageBytes(entry.first());
    if (!bytes || bytes->size() != record.size)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          output->getPath() + ": storage '" + entry.first() + "' of " +
              std::to_string(record.size) + " bytes is not in " +
              source.getPath() + " at that size");
    std::memcpy(output->getData() + record.dataOffset, bytes->data(),
                record.size);
  }
  return llvm::Error::success();
}

void TorchFileWriter::writeLocalHeader(const Record &record, uint32_t crc) {
  char *base = output->getData();
  uint32_t size32 = zip64 ? kLimit32 : static_cast<uint32_t>(record.size);
  uint64_t extra = record.dataOffset - record.headerOffset - kLocalHeaderSize -
                   record.name.size();
  uint64_t padding = extra - (zip64 ? kLocalZip64Extra : 0) - kPaddingExtra;
  Writer local(base + record.headerOffset);
  local.put<uint32_t>(0x04034b50);
  local.put<uint16_t>(zip64 ? 45 : 20);
  local.put<uint16_t>(kUtf8Names);
  local.put<uint16_t>(0); // Stored.
  local.put<uint16_t>(0);
  local.put<uint16_t>(kDosDate);
  local.put<uint32_t>(crc);
  local.put<uint32_t>(size32);
  local.put<uint32_t>(size32);
  local.put<uint16_t>(static_cast<uint16_t>(record.name.size()));
  local.put<uint16_t>(static_cast<uint16_t>(extra));
  local.bytes(record.name);
  if (zip64) {
    local.put<uint16_t>(0x0001);
    local.put<uint16_t>(16);
    local.put<uint64_t>(record.size);
    local.put<uint64_t>(record.size);
  }
  local.put<uint16_t>(0x4246);
  local.put<uint16_t>(static_cast<uint16_t>(padding));
  local.fill('Z', padding);
}

void TorchFileWriter::writeDirectory(llvm::ArrayRef<uint32_t> crcs) {
  uint16_t version = zip64 ? 45 : 20;
  Writer central(output->getData() + directoryOffset);
  for (auto [record, crc] : llvm::zip(records, crcs)) {
    central.put<uint32_t>(0x02014b50);
    central.put<uint16_t>(version);
    central.put<uint16_t>(version);
    central.put<uint16_t>(kUtf8Names);
    central.put<uint16_t>(0);
    central.put<uint16_t>(0);
    central.put<uint16_t>(kDosDate);
    central.put<uint32_t>(crc);
    uint32_t size32 = zip64 ? kLimit32 : static_cast<uint32_t>(record.size);
    central.put<uint32_t>(size32);
    central.put<uint32_t>(size32);
    central.put<uint16_t>(static_cast<uint16_t>(record.name.size()));
    central.put<uint16_t>(zip64 ? kCentralZip64Extra : 0);
    central.put<uint16_t>(0); // Comment.
    central.put<uint16_t>(0); // Disk.
    central.put<uint16_t>(0); // Internal attributes.
    central.put<uint32_t>(0); // External attributes.
    central.put<uint32_t>(zip64 ? kLimit32
                                : static_cast<uint32_t>(record.headerOffset));
    central.bytes(record.name);
    if (zip64) {
      central.put<uint16_t>(0x0001);
      central.put<uint16_t>(24);
      central.put<uint64_t>(record.size);
      central.put<uint64_t>(record.size);
      central.put<uint64_t>(record.headerOffset);
    }
  }
}

void TorchFileWriter::writeDirectoryEnd() {
  uint64_t directoryEnd =
      output->getSize() - kEndSize - (zip64 ? kEnd64Size + kLocatorSize : 0);
  uint64_t directorySize = directoryEnd - directoryOffset;
  Writer end(output->getData() + directoryEnd);
  if (zip64) {
    end.put<uint32_t>(0x06064b50);
    end.put<uint64_t>(kEnd64Size - 12);
    end.put<uint16_t>(45);
    end.put<uint16_t>(45);
    end.put<uint32_t>(0);
    end.put<uint32_t>(0);
    end.put<uint64_t>(records.size());
    end.put<uint64_t>(records.size());
    end.put<uint64_t>(directorySize);
    end.put<uint64_t>(directoryOffset);
    end.put<uint32_t>(0x07064b50);
    end.put<uint32_t>(0);
    end.put<uint64_t>(directoryEnd);
    end.put<uint32_t>(1);
  }
  end.put<uint32_t>(0x06054b50);
  end.put<uint16_t>(0);
  end.put<uint16_t>(0);
  uint16_t entries = zip64 ? 0xFFFF : static_cast<uint16_t>(records.size());
  end.put<uint16_t>(entries);
  end.put<uint16_t>(entries);
  end.put<uint32_t>(zip64 ? kLimit32 : static_cast<uint32_t>(directorySize));
  end.put<uint32_t>(zip64 ? kLimit32 : static_cast<uint32_t>(directoryOffset));
  end.put<uint16_t>(0);
}

llvm::Error TorchFileWriter::commit(bool durable) {
  const char *base = output->getData();
  std::vector<uint32_t> crcs;
  for (const Record &record : records) {
    crcs.push_back(
        crc32_z(0, reinterpret_cast<const Bytef *>(base + record.dataOffset),
                record.size));
    writeLocalHeader(record, crcs.back());
  }
  writeDirectory(crcs);
  writeDirectoryEnd();
  if (llvm::Error error = output->flush(durable))
    return error;
  return output->commit();
}

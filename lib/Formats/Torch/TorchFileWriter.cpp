//===- TorchFileWriter.cpp - Writing torch.save files ---------------------===//
//
// The layout is fixed before any byte is written: record by record, a
// local header padded (extra field 0x4246, as torch pads) so that the data
// starts on a 64-byte boundary, then the central directory and its end.
// Headers carry CRCs, so they are written last, once the data is in place.
//
//===----------------------------------------------------------------------===//

#include "ucp/Formats/Torch/TorchFileWriter.h"
#include "ucp/Support/Crc32.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"


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

/// Little-endian writes appended to a string.
class Writer {
public:
  explicit Writer(std::string &out) : out(out) {}
  template <typename T> void put(T value) {
    char bytes[sizeof(T)];
    llvm::support::endian::write<T, llvm::endianness::little>(bytes, value);
    out.append(bytes, sizeof(T));
  }
  void bytes(StringRef data) { out.append(data.data(), data.size()); }
  void fill(char value, uint64_t count) { out.append(count, value); }

private:
  std::string &out;
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
    return makeError(path + ": " + why.str());
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
  writer->fileSize = size;
  Expected<std::unique_ptr<OutputFile>> output = OutputFile::create(path);
  if (!output)
    return output.takeError();
  if ((*output)->isStandardOutput())
    return refuse("a torch.save file is written in place, so it needs a "
                  "file, not standard output");
  writer->output = std::move(*output);
  if (llvm::Error error = writer->output->reserve(size))
    return std::move(error);
  if (llvm::Error error = writer->writeRecord(writer->records.front(),
                                              {StringRef(*pickle)}, {}))
    return std::move(error);
  if (llvm::Error error =
          writer->writeRecord(writer->records.back(), {"3\n"}, {}))
    return std::move(error);
  return writer;
}

llvm::Error
TorchFileWriter::writeRecord(Record &record, llvm::ArrayRef<StringRef> pieces,
                             llvm::function_ref<void(StringRef)> written) {
  return writeRecord(
      record, pieces.size(), [&](size_t i) { return pieces[i]; }, written);
}

llvm::Error
TorchFileWriter::writeRecord(Record &record, size_t count,
                             llvm::function_ref<StringRef(size_t)> piece,
                             llvm::function_ref<void(StringRef)> written) {
  auto refuse = [&](uint64_t size) {
    return makeError(output->getPath() + ": record " + record.name +
                     (record.crc ? " written twice"
                                 : " of " + std::to_string(record.size) +
                                       " bytes given " + std::to_string(size)));
  };
  if (record.crc)
    return refuse(0);
  uint32_t crc = 0;
  uint64_t offset = record.dataOffset;
  // A batch of chunks at a time: their CRCs computed in parallel (the
  // CRC is as costly as the write) and combined, then each written, the
  // batch small enough that the write reads what the CRC just read from
  // the cache rather than from memory again.
  constexpr size_t kChunk = size_t(1) << 20, kBatch = 4;
  std::vector<StringRef> batch;
  std::vector<uint32_t> crcs;
  auto flush = [&]() -> llvm::Error {
    crcs.assign(batch.size(), 0);
    llvm::parallelFor(0, batch.size(),
                      [&](size_t c) { crcs[c] = computeCrc32(batch[c]); });
    for (auto [chunk, chunkCrc] : llvm::zip(batch, crcs)) {
      crc = combineCrc32(crc, chunkCrc, chunk.size());
      if (llvm::Error error = output->writeAt(offset, chunk))
        return error;
      if (written)
        written(chunk);
      offset += chunk.size();
    }
    batch.clear();
    return llvm::Error::success();
  };
  uint64_t given = 0;
  for (size_t i = 0; i < count; ++i) {
    StringRef bytes = piece(i);
    if (given + bytes.size() > record.size)
      return refuse(given + bytes.size());
    given += bytes.size();
    for (size_t at = 0; at < bytes.size(); at += kChunk) {
      batch.push_back(bytes.substr(at, kChunk));
      if (batch.size() == kBatch)
        if (llvm::Error error = flush())
          return error;
    }
    // A piece's bytes may not outlive the next call of `piece` (a buffer
    // reused), so each is written before the next is asked for.
    if (llvm::Error error = flush())
      return error;
  }
  if (given != record.size)
    return refuse(given);
  record.crc = crc;
  return llvm::Error::success();
}

llvm::Error
TorchFileWriter::writeStorage(StringRef key, llvm::ArrayRef<StringRef> pieces,
                              llvm::function_ref<void(StringRef)> written) {
  return writeStorage(
      key, pieces.size(), [&](size_t i) { return pieces[i]; }, written);
}

llvm::Error
TorchFileWriter::writeStorage(StringRef key, size_t count,
                              llvm::function_ref<StringRef(size_t)> piece,
                              llvm::function_ref<void(StringRef)> written) {
  auto it = storageRecords.find(key);
  if (it == storageRecords.end())
    return makeError(output->getPath() + ": no storage '" + key + "'");
  return writeRecord(records[it->second], count, piece, written);
}

llvm::Error TorchFileWriter::copyStoragesFrom(const TorchFile &source) {
  for (const auto &entry : storageRecords) {
    const Record &record = records[entry.second];
    if (record.crc)
      continue; // Written already.
    std::optional<StringRef> bytes = source.getStorageBytes(entry.first());
    if (!bytes || bytes->size() != record.size)
      return makeError(output->getPath() + ": storage '" + entry.first() +
                       "' of " + std::to_string(record.size) +
                       " bytes is not in " + source.getPath() +
                       " at that size");
    // Read once: the pages of the input go as they are written.
    if (llvm::Error error =
            writeRecord(records[entry.second], {*bytes}, [&](StringRef chunk) {
              source.releasePages(chunk.data(), chunk.size());
            }))
      return error;
  }
  return llvm::Error::success();
}

std::string TorchFileWriter::getLocalHeader(const Record &record) const {
  uint32_t size32 = zip64 ? kLimit32 : static_cast<uint32_t>(record.size);
  uint64_t extra = record.dataOffset - record.headerOffset - kLocalHeaderSize -
                   record.name.size();
  uint64_t padding = extra - (zip64 ? kLocalZip64Extra : 0) - kPaddingExtra;
  std::string header;
  Writer local(header);
  local.put<uint32_t>(0x04034b50);
  local.put<uint16_t>(zip64 ? 45 : 20);
  local.put<uint16_t>(kUtf8Names);
  local.put<uint16_t>(0); // Stored.
  local.put<uint16_t>(0);
  local.put<uint16_t>(kDosDate);
  local.put<uint32_t>(*record.crc);
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
  return header;
}

/// The central directory's entry of `record`.
static void writeCentralEntry(Writer &central,
                              const TorchFileWriter::Record &record,
                              bool zip64) {
  uint16_t version = zip64 ? 45 : 20;
  central.put<uint32_t>(0x02014b50);
  central.put<uint16_t>(version);
  central.put<uint16_t>(version);
  central.put<uint16_t>(kUtf8Names);
  central.put<uint16_t>(0);
  central.put<uint16_t>(0);
  central.put<uint16_t>(kDosDate);
  central.put<uint32_t>(*record.crc);
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

std::string TorchFileWriter::getDirectory() const {
  std::string directory;
  Writer central(directory);
  for (const Record &record : records)
    writeCentralEntry(central, record, zip64);
  uint64_t directorySize = directory.size();
  uint64_t directoryEnd = directoryOffset + directorySize;
  if (zip64) {
    central.put<uint32_t>(0x06064b50);
    central.put<uint64_t>(kEnd64Size - 12);
    central.put<uint16_t>(45);
    central.put<uint16_t>(45);
    central.put<uint32_t>(0);
    central.put<uint32_t>(0);
    central.put<uint64_t>(records.size());
    central.put<uint64_t>(records.size());
    central.put<uint64_t>(directorySize);
    central.put<uint64_t>(directoryOffset);
    central.put<uint32_t>(0x07064b50);
    central.put<uint32_t>(0);
    central.put<uint64_t>(directoryEnd);
    central.put<uint32_t>(1);
  }
  central.put<uint32_t>(0x06054b50);
  central.put<uint16_t>(0);
  central.put<uint16_t>(0);
  uint16_t entries = zip64 ? 0xFFFF : static_cast<uint16_t>(records.size());
  central.put<uint16_t>(entries);
  central.put<uint16_t>(entries);
  central.put<uint32_t>(zip64 ? kLimit32
                              : static_cast<uint32_t>(directorySize));
  central.put<uint32_t>(zip64 ? kLimit32
                              : static_cast<uint32_t>(directoryOffset));
  central.put<uint16_t>(0);
  return directory;
}

llvm::Error TorchFileWriter::commit(bool durable) {
  for (const Record &record : records) {
    if (!record.crc)
      return makeError(output->getPath() + ": record " + record.name +
                       " was never written");
    if (llvm::Error error =
            output->writeAt(record.headerOffset, getLocalHeader(record)))
      return error;
  }
  std::string directory = getDirectory();
  assert(directoryOffset + directory.size() == fileSize &&
         "the directory ends the file");
  if (llvm::Error error = output->writeAt(directoryOffset, directory))
    return error;
  return output->commit(durable);
}

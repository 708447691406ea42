//===- TorchArchive.cpp - The zip container of torch.save files -----------===//
//
// The zip format as far as torch.save uses it (PKWARE's APPNOTE): the end of
// central directory record (and its zip64 form), central directory entries
// (with their zip64 extra field), and local file headers. Anything else a
// zip may hold (compression, encryption, several disks) is refused.
//
//===----------------------------------------------------------------------===//

#include "ucp/Formats/Torch/TorchArchive.h"
#include "ucp/Support/Crc32.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kEndOfDirectory64 = 0x06064b50;
constexpr uint32_t kEndLocator64 = 0x07064b50;
constexpr uint16_t kZip64Extra = 0x0001;
/// The fixed parts of the records, in bytes.
constexpr uint64_t kLocalHeaderSize = 30, kCentralHeaderSize = 46,
                   kEndSize = 22, kEndLocatorSize = 20, kEnd64Size = 56;

/// Little-endian reads inside `bytes`, failing once past its end.
class Reader {
public:
  Reader(StringRef bytes, uint64_t at) : bytes(bytes), at(at) {}
  bool fits(uint64_t count) const {
    return at <= bytes.size() && count <= bytes.size() - at;
  }
  std::optional<uint64_t> read(unsigned width) {
    if (!fits(width))
      return std::nullopt;
    uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i)
      value |= uint64_t(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
    at += width;
    return value;
  }
  std::optional<StringRef> take(uint64_t count) {
    if (!fits(count))
      return std::nullopt;
    StringRef result = bytes.substr(at, count);
    at += count;
    return result;
  }
  uint64_t getOffset() const { return at; }

private:
  StringRef bytes;
  uint64_t at;
};

/// The end of central directory: where the entries are and how many.
struct Directory {
  uint64_t entries = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

} // namespace

/// Finds the end of central directory record: the last one in the final
/// 64 KiB + 22 bytes (a comment may follow it), then its zip64 form where a
/// locator precedes it.
static Expected<Directory> findDirectory(StringRef path, StringRef bytes) {
  if (bytes.size() < kEndSize)
    return makeError(path,
                     "too short for a zip archive (torch.save writes one)");
  uint64_t lowest =
      bytes.size() > 0xFFFF + kEndSize ? bytes.size() - (0xFFFF + kEndSize) : 0;
  std::optional<uint64_t> end;
  for (uint64_t at = bytes.size() - kEndSize + 1; at-- > lowest;) {
    Reader r(bytes, at);
    if (r.read(4) == kEndOfDirectory) {
      end = at;
      break;
    }
  }
  if (!end)
    return makeError(path, "no end of central directory: not a zip archive, or "
                           "a truncated one");
  Reader r(bytes, *end + 4);
  uint64_t disk = *r.read(2), directoryDisk = *r.read(2);
  uint64_t entriesHere = *r.read(2);
  Directory directory{*r.read(2), *r.read(4), *r.read(4)};
  if (disk != 0 || directoryDisk != 0 || entriesHere != directory.entries)
    return makeError(path, "a zip archive spanning several disks");
  if (*end < kEndLocatorSize ||
      Reader(bytes, *end - kEndLocatorSize).read(4) != kEndLocator64)
    return directory;
  Reader locator(bytes, *end - kEndLocatorSize + 4);
  (void)locator.read(4);
  uint64_t end64 = *locator.read(8);
  Reader record(bytes, end64);
  if (!record.fits(kEnd64Size) || record.read(4) != kEndOfDirectory64)
    return makeError(path, "the zip64 end of central directory at " +
                               std::to_string(end64) + " is missing");
  (void)record.take(8 + 2 + 2); // Size, versions.
  if (*record.read(4) != 0 || *record.read(4) != 0)
    return makeError(path, "a zip archive spanning several disks");
  entriesHere = *record.read(8);
  directory = {*record.read(8), *record.read(8), *record.read(8)};
  if (entriesHere != directory.entries)
    return makeError(path, "a zip archive spanning several disks");
  return directory;
}

/// Refuses a record name that is not `<root>/<path>` with a relative path
/// of plain components (no `..`, `.`, empty or absolute part).
static Error checkName(StringRef path, StringRef name) {
  if (name.empty() || name.front() == '/' || name.contains('\\') ||
      name.contains('\0'))
    return makeError(path, "record name '" + name + "' is not a relative path");
  llvm::SmallVector<StringRef> parts;
  name.split(parts, '/');
  for (StringRef part : parts)
    if (part.empty() || part == "." || part == "..")
      return makeError(path, "record name '" + name +
                                 "' has an empty, '.' or '..' component");
  if (parts.size() < 2)
    return makeError(path, "record name '" + name + "' is not under a folder");
  return Error::success();
}

namespace {
/// One central directory entry, zip64 sizes resolved.
struct Entry {
  StringRef name;
  uint64_t flags = 0, method = 0, compressed = 0, size = 0, local = 0;
  uint32_t crc = 0;
};
} // namespace

/// Reads the central directory entry at `r` (entry `index`), which must end
/// by `directoryEnd`.
static Expected<Entry> readEntry(StringRef path, Reader &r,
                                 uint64_t directoryEnd, uint64_t index) {
  std::string at = "central directory entry #" + std::to_string(index);
  if (!r.fits(kCentralHeaderSize) || r.read(4) != kCentralHeader)
    return makeError(path, at + " is not where the directory says");
  Entry entry;
  (void)r.read(2 + 2); // Versions.
  entry.flags = *r.read(2);
  entry.method = *r.read(2);
  (void)r.read(2 + 2); // Time, date.
  entry.crc = *r.read(4);
  entry.compressed = *r.read(4);
  entry.size = *r.read(4);
  uint64_t nameLength = *r.read(2), extraLength = *r.read(2),
           commentLength = *r.read(2);
  (void)r.read(2 + 2 + 4); // Disk, attributes.
  entry.local = *r.read(4);
  std::optional<StringRef> name = r.take(nameLength);
  std::optional<StringRef> extra = r.take(extraLength);
  if (!name || !extra || !r.take(commentLength) || r.getOffset() > directoryEnd)
    return makeError(path, at + " runs past the central directory");
  entry.name = *name;
  // Sizes of 0xFFFFFFFF (and the offset) live in the zip64 extra field.
  Reader fields(*extra, 0);
  while (fields.fits(4)) {
    uint64_t id = *fields.read(2), length = *fields.read(2);
    std::optional<StringRef> data = fields.take(length);
    if (!data)
      return makeError(path, at + " has an extra field past its end");
    if (id != kZip64Extra)
      continue;
    Reader zip64(*data, 0);
    for (uint64_t *value : {&entry.size, &entry.compressed, &entry.local})
      if (*value == 0xFFFFFFFF) {
        std::optional<uint64_t> wide = zip64.read(8);
        if (!wide)
          return makeError(path, at + " has a short zip64 extra field");
        *value = *wide;
      }
  }
  return entry;
}

/// Returns the data of `entry`: after its local header, before the central
/// directory at `recordsEnd`.
static Expected<StringRef> locateData(StringRef path, StringRef bytes,
                                      const Entry &entry, uint64_t recordsEnd) {
  std::string record = ("record '" + entry.name + "'").str();
  if (entry.flags & 1)
    return makeError(path, record + " is encrypted");
  if (entry.method != 0 || entry.compressed != entry.size)
    return makeError(path, record + " is compressed; torch.save writes every "
                                    "record stored");
  Reader header(bytes, entry.local);
  if (!header.fits(kLocalHeaderSize) || header.read(4) != kLocalHeader)
    return makeError(path, record + " has no local header at " +
                               std::to_string(entry.local));
  (void)header.take(22);
  uint64_t localName = *header.read(2), localExtra = *header.read(2);
  if (header.take(localName) != entry.name)
    return makeError(path, record + " is named otherwise in its local header");
  if (!header.take(localExtra))
    return makeError(path, record + " runs past the file");
  std::optional<StringRef> data = header.take(entry.size);
  if (!data || header.getOffset() > recordsEnd)
    return makeError(path, record + " of " + std::to_string(entry.size) +
                               " bytes runs past the file's records");
  return *data;
}

Error TorchArchive::readCentralDirectory() {
  StringRef bytes = buffer->getBuffer();
  Expected<Directory> directory = findDirectory(path, bytes);
  if (!directory)
    return directory.takeError();
  if (directory->size > bytes.size() ||
      directory->offset > bytes.size() - directory->size)
    return makeError(path,
                     "the central directory runs past the end of the file");
  if (directory->entries > directory->size / kCentralHeaderSize)
    return makeError(path, "the central directory cannot hold its " +
                               std::to_string(directory->entries) + " entries");
  if (directory->entries == 0)
    return makeError(path, "the archive holds no records");
  Reader r(bytes, directory->offset);
  for (uint64_t i = 0; i < directory->entries; ++i) {
    Expected<Entry> entry =
        readEntry(path, r, directory->offset + directory->size, i);
    if (!entry)
      return entry.takeError();
    if (Error error = checkName(path, entry->name))
      return error;
    Expected<StringRef> data =
        locateData(path, bytes, *entry, directory->offset);
    if (!data)
      return data.takeError();
    auto [first, rest] = entry->name.split('/');
    if (i == 0)
      root = first.str();
    else if (first != root)
      return makeError(path, "record '" + entry->name +
                                 "' is not under the root '" + root +
                                 "' of the others");
    if (!records.try_emplace(rest, *data).second)
      return makeError(path, "record '" + entry->name + "' appears twice");
    names.push_back(rest.str());
    crcs.push_back(entry->crc);
  }
  return Error::success();
}

Expected<std::vector<TorchArchive::CrcMismatch>>
TorchArchive::findCrcMismatches(const RangeCrcs *known) const {
  std::vector<CrcMismatch> mismatches;
  // Read from the file, not through the mapping (computeMappedCrc32): no
  // page of it stays in this process's memory, and no page fault is taken
  // per 4 KiB.
  for (auto [name, recorded] : llvm::zip(names, crcs)) {
    StringRef record = records.lookup(name);
    Expected<uint32_t> crc = known ? known->compute(*buffer, record)
                                   : computeMappedCrc32(buffer.get(), record);
    if (!crc)
      return makeError(llvm::toString(crc.takeError()) + " (record '" + name +
                       "')");
    if (*crc != recorded)
      mismatches.push_back({name, recorded, *crc});
  }
  return mismatches;
}

Expected<std::unique_ptr<TorchArchive>>
TorchArchive::parse(std::unique_ptr<llvm::MemoryBuffer> file) {
  auto archive = std::unique_ptr<TorchArchive>(new TorchArchive());
  archive->path = file->getBufferIdentifier().str();
  archive->buffer = std::move(file);
  if (Error error = archive->readCentralDirectory())
    return std::move(error);
  return archive;
}

Expected<std::unique_ptr<TorchArchive>> TorchArchive::open(StringRef path) {
  Expected<std::unique_ptr<llvm::MemoryBuffer>> file =
      readInputFile(path, {/*nullTerminated=*/false, llvm::Align(64)});
  if (!file)
    return file.takeError();
  return parse(std::move(*file));
}

std::optional<StringRef> TorchArchive::getRecord(StringRef name) const {
  auto it = records.find(name);
  if (it == records.end())
    return std::nullopt;
  return it->second;
}

std::vector<std::pair<int64_t, int64_t>>
ucp::getStoragePayloads(const llvm::MemoryBuffer &file, int64_t minBytes) {
  std::vector<std::pair<int64_t, int64_t>> payloads;
  llvm::Expected<std::unique_ptr<TorchArchive>> archive = TorchArchive::parse(
      llvm::MemoryBuffer::getMemBuffer(file.getMemBufferRef(), false));
  if (!archive) {
    llvm::consumeError(archive.takeError());
    return payloads;
  }
  for (const std::string &name : (*archive)->getRecordNames()) {
    std::optional<llvm::StringRef> record = (*archive)->getRecord(name);
    if (!llvm::StringRef(name).starts_with("data/") || !record ||
        static_cast<int64_t>(record->size()) < minBytes)
      continue;
    payloads.push_back({record->data() - file.getBufferStart(),
                        static_cast<int64_t>(record->size())});
  }
  llvm::sort(payloads);
  return payloads;
}

//===- TorchArchive.h - The zip container of torch.save files ---*- C++ -*-===//
//
// torch.save writes a zip archive whose entries are all STORED (never
// compressed): `<root>/data.pkl` (the pickle), `<root>/data/<key>` (one
// record per storage), `<root>/version` and, from torch 2, `byteorder` and
// `.data/serialization_id`. Every record's data starts at a 64-byte aligned
// offset, and the local headers carry no sizes (bit 3: a data descriptor
// follows), so sizes come from the central directory; torch writes a zip64
// end of central directory record even for small files.
//
// TorchArchive maps the file and validates the whole central directory
// before anything is read: every record STORED and unencrypted, inside the
// file and after its local header, named under one root without `..`,
// absolute or empty components, and named once. Records are then views into
// the mapping: nothing is copied. CRCs are not checked on open (it would
// read every byte a second time; the bounds are), but on request
// (findCrcMismatches, what `affine-run check` runs).
//
// Why not a library: libzip reads records by copying them out and exposes
// no record's offset in the file, which a zero-copy reader needs; libtorch's
// PyTorchStreamReader has the offsets but comes with libtorch and reports
// errors by C++ exceptions, which this project builds without.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_TORCH_TORCHARCHIVE_H
#define UCP_FORMATS_TORCH_TORCHARCHIVE_H

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace ucp {

class RangeCrcs;

/// The (offset, bytes) in `file` of the payloads of its records named
/// `data/...` (a torch.save archive's storages) of at least `minBytes`, in
/// file order; none when `file` is not a valid archive.
std::vector<std::pair<int64_t, int64_t>>
getStoragePayloads(const llvm::MemoryBuffer &file, int64_t minBytes);

/// A torch.save archive opened for reading (memory-mapped).
class TorchArchive {
public:
  /// Opens and validates the archive at `path`; errors name the file and,
  /// where one is at fault, the record.
  static llvm::Expected<std::unique_ptr<TorchArchive>>
  open(llvm::StringRef path);
  /// Validates the archive held by `file` (named by its identifier).
  static llvm::Expected<std::unique_ptr<TorchArchive>>
  parse(std::unique_ptr<llvm::MemoryBuffer> file);

  /// The first component every record name shares (the file's name
  /// without `.pt`, as torch writes it).
  llvm::StringRef getRoot() const { return root; }
  /// Returns the bytes of the record `<root>/name`, if there is one.
  std::optional<llvm::StringRef> getRecord(llvm::StringRef name) const;
  /// The names of every record, relative to the root, in directory order.
  llvm::ArrayRef<std::string> getRecordNames() const { return names; }
  llvm::StringRef getPath() const { return path; }
  /// The file's bytes.
  const llvm::MemoryBuffer &getBuffer() const { return *buffer; }

  /// A record whose bytes do not have the CRC-32 the central directory
  /// records for it.
  struct CrcMismatch {
    std::string name;
    uint32_t recorded = 0, computed = 0;
  };
  /// Recomputes every record's CRC-32 (in parallel; from the file rather
  /// than the mapping when it was opened from one) against the
  /// directory's, in directory order; an error where the file cannot be
  /// read. Ranges of the file whose CRCs `known` holds are not read again.
  llvm::Expected<std::vector<CrcMismatch>>
  findCrcMismatches(const RangeCrcs *known = nullptr) const;

private:
  TorchArchive() = default;
  llvm::Error readCentralDirectory();

  std::string path;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  std::string root;
  std::vector<std::string> names;
  /// The CRC-32 the directory records for each of `names`.
  std::vector<uint32_t> crcs;
  llvm::StringMap<llvm::StringRef> records;
};

} // namespace ucp

#endif // UCP_FORMATS_TORCH_TORCHARCHIVE_H

//===- Safetensors.h - Reading and writing safetensors files ----*- C++ -*-===//
//
// The safetensors format: an 8-byte little-endian header length, a JSON
// header {name: {"dtype", "shape", "data_offsets": [begin, end]}} (plus an
// optional "__metadata__"), then the tensor data. Files are read through a
// memory mapping, so tensors are used in place. Files are written through a
// mapping too, under a temporary name that `commit` renames, so that a
// failed or interrupted run leaves nothing behind.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_SAFETENSORS_SAFETENSORS_H
#define UCP_FORMATS_SAFETENSORS_SAFETENSORS_H

#include "ucp/Element/DType.h"
#include "ucp/Map/ParamMap.h"
#include "ucp/Support/MappedOutputFile.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace ucp {

/// One tensor of a file.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Extents shape;
  /// Byte range in the data section.
  int64_t begin = 0;
  int64_t end = 0;
};

/// A safetensors file opened for reading (memory-mapped).
class SafetensorsReader {
public:
  /// Opens and validates `path`; errors name the file and the tensor.
  static llvm::Expected<std::unique_ptr<SafetensorsReader>>
  open(llvm::StringRef path);
  /// Validates the bytes of `file` (named by its identifier in errors).
  static llvm::Expected<std::unique_ptr<SafetensorsReader>>
  parse(std::unique_ptr<llvm::MemoryBuffer> file);

  /// The tensors, sorted by name.
  llvm::ArrayRef<TensorInfo> getTensors() const { return tensors; }
  /// Returns the tensor `name`, or null.
  const TensorInfo *find(llvm::StringRef name) const;
  /// Returns the first byte of `tensor`'s data.
  const char *getData(const TensorInfo &tensor) const {
    return buffer->getBufferStart() + dataStart + tensor.begin;
  }
  llvm::StringRef getPath() const { return path; }
  /// The bytes of the file, mapped where large.
  const llvm::MemoryBuffer &getBuffer() const { return *buffer; }

private:
  std::string path;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  int64_t dataStart = 0;
  std::vector<TensorInfo> tensors;
};

/// The alignment of the data section of a file SafetensorsWriter writes.
constexpr int64_t kCacheLineBytes = 64;

/// A safetensors file being written through a writable mapping of a
/// temporary file next to its final path (an OutputFile).
class SafetensorsWriter {
public:
  /// Creates the temporary file for `tensors` (name, dtype, shape) at full
  /// size and maps it. The data section starts on a kCacheLineBytes
  /// boundary of the file; tensors of a whole number of cache lines come
  /// first, then the others by element size, largest first, then by name:
  /// every tensor is aligned to its element size, those of whole lines to
  /// a line, with no gaps.
  static llvm::Expected<std::unique_ptr<SafetensorsWriter>>
  create(llvm::StringRef path, std::vector<TensorInfo> tensors);

  /// Returns where the data of the tensor `name` goes, or null if the file
  /// has no such tensor.
  char *getData(llvm::StringRef name);
  /// Writes the data back and unmaps the file. With `durable`, returns only
  /// once the data is on disk (msync), so that a crash after the rename
  /// cannot leave a file of zeros under the final name.
  llvm::Error flush(bool durable);
  /// Flushes the file (without waiting for the disk) unless flush() did,
  /// and renames it to its final path.
  llvm::Error commit();

private:
  SafetensorsWriter() = default;
  std::string path;
  std::unique_ptr<MappedOutputFile> output;
  std::vector<TensorInfo> tensors;
  /// Index in `tensors` by name: checkpoints have tens of thousands.
  llvm::StringMap<size_t> indexByName;
  int64_t dataStart = 0;
};

} // namespace ucp

#endif // UCP_FORMATS_SAFETENSORS_SAFETENSORS_H

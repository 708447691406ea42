//===- Safetensors.cpp - Reading and writing safetensors files ------------===//

#include "ucp/IO/Safetensors.h"
#include "JsonReading.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <tuple>
#include <unistd.h>

using namespace ucp;
using llvm::Expected;
namespace json = llvm::json;
namespace fs = llvm::sys::fs;

static llvm::Error refuse(llvm::StringRef path, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + why.str());
}

/// Checks that the tensors of `reader` tile its data section of
/// `dataSize` bytes, in some order, as the format requires: two tensors
/// sharing bytes would read the same data under two names, and bytes no
/// tensor holds mean a file written wrong. (The reference implementation
/// refuses both too.)
static llvm::Error checkTiling(const SafetensorsReader &reader,
                               int64_t dataSize) {
  std::vector<const TensorInfo *> byOffset;
  for (const TensorInfo &tensor : reader.getTensors())
    byOffset.push_back(&tensor);
  llvm::sort(byOffset, [](const TensorInfo *a, const TensorInfo *b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  auto unclaimed = [&](int64_t from, int64_t to) {
    return refuse(reader.getPath(), "bytes " + std::to_string(from) + " to " +
                                        std::to_string(to) +
                                        " of the data belong to no tensor");
  };
  int64_t next = 0;
  const TensorInfo *previous = nullptr;
  for (const TensorInfo *tensor : byOffset) {
    if (tensor->begin < next)
      return refuse(reader.getPath(),
                    "tensors '" + previous->name + "' and '" + tensor->name +
                        "' share bytes " + std::to_string(tensor->begin) +
                        " to " + std::to_string(std::min(next, tensor->end)) +
                        " of the data");
    if (tensor->begin > next)
      return unclaimed(next, tensor->begin);
    next = tensor->end;
    previous = tensor;
  }
  if (next != dataSize)
    return unclaimed(next, dataSize);
  return llvm::Error::success();
}

Expected<std::unique_ptr<SafetensorsReader>>
SafetensorsReader::open(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false,
                                  /*IsVolatile=*/false,
                                  llvm::Align(kCacheLineBytes));
  if (!file)
    return refuse(path, "cannot read: " + file.getError().message());
  auto reader = std::unique_ptr<SafetensorsReader>(new SafetensorsReader());
  reader->path = path.str();
  reader->buffer = std::move(*file);
  llvm::StringRef bytes = reader->buffer->getBuffer();
  if (bytes.size() < 8)
    return refuse(path, "too short for a safetensors header");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = headerSize << 8 | static_cast<uint8_t>(bytes[i]);
  if (headerSize > bytes.size() - 8)
    return refuse(path, "header of " + std::to_string(headerSize) +
                            " bytes runs past the end of the file");
  reader->dataStart = 8 + headerSize;
  int64_t dataSize = bytes.size() - reader->dataStart;

  Expected<json::Value> header = parseJson(bytes.substr(8, headerSize));
  if (!header)
    return refuse(path, llvm::toString(header.takeError()));
  JsonPath root;
  Expected<const json::Object *> object = getObject(*header, root);
  if (!object)
    return refuse(path, llvm::toString(object.takeError()));
  for (const auto &entry : **object) {
    if (entry.first == "__metadata__")
      continue;
    JsonPath tensorPath = root.field(entry.first);
    Expected<const json::Object *> tensor = getObject(entry.second, tensorPath);
    if (!tensor)
      return refuse(path, llvm::toString(tensor.takeError()));
    TensorInfo info;
    info.name = entry.first.str();
    Expected<const json::Value *> dtype = getKey(**tensor, "dtype", tensorPath);
    if (!dtype)
      return refuse(path, llvm::toString(dtype.takeError()));
    std::optional<llvm::StringRef> dtypeName = (*dtype)->getAsString();
    std::optional<DType> type =
        dtypeName ? parseSafetensorsName(*dtypeName) : std::nullopt;
    if (!type) {
      std::string supported;
      for (DType known : kAllDTypes)
        supported +=
            (supported.empty() ? "" : ", ") + getSafetensorsName(known).str();
      return refuse(path,
                    "tensor '" + info.name + "' has dtype " +
                        (dtypeName ? "'" + dtypeName->str() + "'"
                                   : std::string("that is not a string")) +
                        "; supported: " + supported);
    }
    info.dtype = *type;
    Expected<Extents> shape = getIntegersAt(**tensor, "shape", tensorPath);
    if (!shape)
      return refuse(path, llvm::toString(shape.takeError()));
    info.shape = std::move(*shape);
    Expected<Extents> offsets =
        getIntegersAt(**tensor, "data_offsets", tensorPath);
    if (!offsets)
      return refuse(path, llvm::toString(offsets.takeError()));
    // Checked in an order in which no difference or product can overflow.
    std::optional<int64_t> elements = getNumElements(info.shape);
    int64_t bytes = 0;
    if (offsets->size() != 2 || !elements ||
        llvm::MulOverflow(*elements, getElementSize(info.dtype), bytes) ||
        (*offsets)[0] < 0 || (*offsets)[1] < (*offsets)[0] ||
        (*offsets)[1] > dataSize || (*offsets)[1] - (*offsets)[0] != bytes)
      return refuse(path,
                    "tensor '" + info.name + "' of shape " +
                        formatList(info.shape) +
                        " has data offsets that do not fit it or the file");
    info.begin = (*offsets)[0];
    info.end = (*offsets)[1];
    reader->tensors.push_back(std::move(info));
  }
  if (llvm::Error error = checkTiling(*reader, dataSize))
    return std::move(error);
  llvm::sort(reader->tensors, [](const TensorInfo &a, const TensorInfo &b) {
    return a.name < b.name;
  });
  return reader;
}

const TensorInfo *SafetensorsReader::find(llvm::StringRef name) const {
  auto it = llvm::partition_point(
      tensors, [&](const TensorInfo &t) { return t.name < name; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

/// Allocates the blocks of the first `size` bytes of `fd` where the file
/// system can: a file written through a mapping that runs out of space
/// would otherwise end the process with SIGBUS in the middle of the run.
static std::error_code reserveBlocks(int fd, uint64_t size) {
#if defined(__linux__)
  if (::fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0 &&
      errno != EOPNOTSUPP && errno != ENOSYS)
    return std::error_code(errno, std::generic_category());
#endif
  return {};
}

Expected<std::unique_ptr<SafetensorsWriter>>
SafetensorsWriter::create(llvm::StringRef path,
                          std::vector<TensorInfo> tensors) {
  auto writer = std::unique_ptr<SafetensorsWriter>(new SafetensorsWriter());
  writer->path = path.str();
  // Tensors of a whole number of cache lines first, each then starting on
  // a line; then the others by element size, largest first, so that each
  // starts at a multiple of its element size; then by name. No gaps between
  // tensors: the reference safetensors library refuses them (and lays files
  // out by element size and name).
  auto key = [](const TensorInfo &t) {
    int64_t size = getElementSize(t.dtype);
    int64_t bytes = getNumElements(t.shape).value_or(0) * size;
    return std::make_tuple(bytes % kCacheLineBytes != 0, -size,
                           llvm::StringRef(t.name));
  };
  llvm::sort(tensors, [&](const TensorInfo &a, const TensorInfo &b) {
    return key(a) < key(b);
  });
  int64_t offset = 0;
  json::Object header;
  header["__metadata__"] = json::Object{{"format", "pt"}};
  for (TensorInfo &tensor : tensors) {
    tensor.begin = offset;
    offset +=
        getNumElements(tensor.shape).value_or(0) * getElementSize(tensor.dtype);
    tensor.end = offset;
    header[tensor.name] = json::Object{
        {"dtype", getSafetensorsName(tensor.dtype)},
        {"shape", json::Array(tensor.shape)},
        {"data_offsets", json::Array{tensor.begin, tensor.end}},
    };
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(header));
  // Pad the header so that the data starts on a cache line of the mapping
  // (the format allows trailing spaces): a copy whose runs straddle lines
  // reads and writes more of them (13% slower on 256-byte runs).
  while ((8 + text.size()) % kCacheLineBytes != 0)
    text += ' ';
  writer->dataStart = 8 + text.size();
  writer->tensors = std::move(tensors);
  for (auto [i, tensor] : llvm::enumerate(writer->tensors))
    writer->indexByName[tensor.name] = i;

  llvm::SmallString<256> temporary;
  int fd;
  if (std::error_code ec =
          fs::createUniqueFile(path + ".tmp-%%%%%%", fd, temporary))
    return refuse(path, "cannot create a temporary file: " + ec.message());
  writer->temporaryPath = temporary.str().str();
  // An interrupted run (Ctrl-C, a batch system's SIGTERM) leaves nothing
  // behind either.
  llvm::sys::RemoveFileOnSignal(writer->temporaryPath);
  fs::file_t file = fs::convertFDToNativeFile(fd);
  uint64_t size = writer->dataStart + offset;
  std::string failed;
  std::error_code ec = fs::resize_file(fd, size);
  if (ec)
    failed = "cannot size the output";
  if (!ec && (ec = reserveBlocks(fd, size)))
    failed = "cannot reserve " + std::to_string(size) + " bytes for the output";
  if (!ec) {
    writer->region = std::make_unique<fs::mapped_file_region>(
        file, fs::mapped_file_region::readwrite, size, 0, ec);
    if (ec)
      failed = "cannot map the output";
  }
  ::close(fd);
  if (ec)
    return refuse(path, failed + ": " + ec.message());
  char *base = writer->region->data();
  uint64_t headerSize = text.size();
  for (int i = 0; i < 8; ++i)
    base[i] = static_cast<char>(headerSize >> (8 * i));
  std::memcpy(base + 8, text.data(), text.size());
  return writer;
}

SafetensorsWriter::~SafetensorsWriter() {
  region.reset();
  if (!committed && !temporaryPath.empty()) {
    fs::remove(temporaryPath);
    llvm::sys::DontRemoveFileOnSignal(temporaryPath);
  }
}

char *SafetensorsWriter::getData(llvm::StringRef name) {
  auto it = indexByName.find(name);
  if (it == indexByName.end())
    return nullptr;
  return region->data() + dataStart + tensors[it->second].begin;
}

llvm::Error SafetensorsWriter::flush(bool durable) {
  if (!region)
    return llvm::Error::success();
  if (durable && ::msync(region->data(), region->size(), MS_SYNC) != 0)
    return refuse(path, std::string("cannot write the output to disk: ") +
                            std::strerror(errno));
  region.reset(); // Unmaps; the page cache writes the pages back.
  return llvm::Error::success();
}

llvm::Error SafetensorsWriter::commit() {
  if (llvm::Error error = flush(/*durable=*/false))
    return error;
  if (std::error_code ec = fs::rename(temporaryPath, path))
    return refuse(path, "cannot rename the finished file into place: " +
                            ec.message());
  committed = true;
  llvm::sys::DontRemoveFileOnSignal(temporaryPath);
  return llvm::Error::success();
}

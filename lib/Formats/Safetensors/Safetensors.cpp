//===- Safetensors.cpp - Reading and writing safetensors files ------------===//

#include "ucp/Formats/Safetensors/Safetensors.h"
#include "ucp/Formats/Json/JsonReading.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/MappedOutputFile.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <numeric>
#include <tuple>

using namespace ucp;
using llvm::Expected;
namespace json = llvm::json;
namespace fs = llvm::sys::fs;

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
    return makeError(reader.getPath(), "bytes " + std::to_string(from) +
                                           " to " + std::to_string(to) +
                                           " of the data belong to no tensor");
  };
  int64_t next = 0;
  const TensorInfo *previous = nullptr;
  for (const TensorInfo *tensor : byOffset) {
    if (tensor->begin < next)
      return makeError(
          reader.getPath(),
          "tensors '" + previous->name + "' and '" + tensor->name +
              "' share bytes " + std::to_string(tensor->begin) + " to " +
              std::to_string(std::min(next, tensor->end)) + " of the data");
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
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> file = readInputFile(
      path, {/*nullTerminated=*/false, llvm::Align(kCacheLineBytes)});
  if (!file)
    return file.takeError();
  return parse(std::move(*file));
}

Expected<std::unique_ptr<SafetensorsReader>>
SafetensorsReader::parse(std::unique_ptr<llvm::MemoryBuffer> file) {
  llvm::StringRef path = file->getBufferIdentifier();
  auto reader = std::unique_ptr<SafetensorsReader>(new SafetensorsReader());
  reader->path = path.str();
  reader->buffer = std::move(file);
  llvm::StringRef bytes = reader->buffer->getBuffer();
  if (bytes.size() < 8)
    return makeError(path, "too short for a safetensors header");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = headerSize << 8 | static_cast<uint8_t>(bytes[i]);
  if (headerSize > bytes.size() - 8)
    return makeError(path, "header of " + std::to_string(headerSize) +
                               " bytes runs past the end of the file");
  reader->dataStart = 8 + headerSize;
  int64_t dataSize = bytes.size() - reader->dataStart;

  Expected<json::Value> header = parseJson(bytes.substr(8, headerSize));
  if (!header)
    return makeError(path, llvm::toString(header.takeError()));
  JsonPath root;
  Expected<const json::Object *> object = getObject(*header, root);
  if (!object)
    return makeError(path, llvm::toString(object.takeError()));
  for (const auto &entry : **object) {
    if (entry.first == "__metadata__")
      continue;
    JsonPath tensorPath = root.field(entry.first);
    Expected<const json::Object *> tensor = getObject(entry.second, tensorPath);
    if (!tensor)
      return makeError(path, llvm::toString(tensor.takeError()));
    TensorInfo info;
    info.name = entry.first.str();
    Expected<const json::Value *> dtype = getKey(**tensor, "dtype", tensorPath);
    if (!dtype)
      return makeError(path, llvm::toString(dtype.takeError()));
    std::optional<llvm::StringRef> dtypeName = (*dtype)->getAsString();
    std::optional<DType> type =
        dtypeName ? parseSafetensorsName(*dtypeName) : std::nullopt;
    if (!type) {
      std::string supported;
      for (DType known : kAllDTypes)
        supported +=
            (supported.empty() ? "" : ", ") + getSafetensorsName(known).str();
      return makeError(path,
                       "tensor '" + info.name + "' has dtype " +
                           (dtypeName ? "'" + dtypeName->str() + "'"
                                      : std::string("that is not a string")) +
                           "; supported: " + supported);
    }
    info.dtype = *type;
    Expected<Extents> shape = getIntegersAt(**tensor, "shape", tensorPath);
    if (!shape)
      return makeError(path, llvm::toString(shape.takeError()));
    info.shape = std::move(*shape);
    Expected<Extents> offsets =
        getIntegersAt(**tensor, "data_offsets", tensorPath);
    if (!offsets)
      return makeError(path, llvm::toString(offsets.takeError()));
    // Checked in an order in which no difference or product can overflow.
    std::optional<int64_t> elements = getNumElements(info.shape);
    int64_t bytes = 0;
    if (offsets->size() != 2 || !elements ||
        llvm::MulOverflow(*elements, getElementSize(info.dtype), bytes) ||
        (*offsets)[0] < 0 || (*offsets)[1] < (*offsets)[0] ||
        (*offsets)[1] > dataSize || (*offsets)[1] - (*offsets)[0] != bytes)
      return makeError(path,
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
  // Every size is checked before anything is sized or mapped: a shape
  // whose bytes overflow would otherwise size the file wrong and send the
  // writes past its end.
  std::vector<int64_t> bytesOf;
  for (const TensorInfo &tensor : tensors) {
    std::optional<int64_t> bytes = getNumBytes(tensor.shape, tensor.dtype);
    if (!bytes)
      return makeError(path, "tensor '" + tensor.name + "' of shape " +
                                 formatList(tensor.shape) + " and dtype " +
                                 getSafetensorsName(tensor.dtype) +
                                 " has more bytes than int64 can count");
    bytesOf.push_back(*bytes);
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](size_t i) {
    return std::make_tuple(bytesOf[i] % kCacheLineBytes != 0,
                           -getElementSize(tensors[i].dtype),
                           llvm::StringRef(tensors[i].name));
  };
  llvm::sort(order, [&](size_t a, size_t b) { return key(a) < key(b); });
  int64_t offset = 0;
  json::Object header;
  header["__metadata__"] = json::Object{{"format", "pt"}};
  std::vector<TensorInfo> sorted;
  sorted.reserve(tensors.size());
  for (size_t i : order) {
    TensorInfo &tensor = sorted.emplace_back(std::move(tensors[i]));
    tensor.begin = offset;
    if (llvm::AddOverflow(offset, bytesOf[i], offset))
      return makeError(path,
                       "the tensors hold more bytes than int64 can count");
    tensor.end = offset;
    header[tensor.name] = json::Object{
        {"dtype", getSafetensorsName(tensor.dtype)},
        {"shape", json::Array(tensor.shape)},
        {"data_offsets", json::Array{tensor.begin, tensor.end}},
    };
  }
  tensors = std::move(sorted);
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

  int64_t size;
  if (llvm::AddOverflow(writer->dataStart, offset, size))
    return makeError(path,
                     "the file would hold more bytes than int64 can count");
  // Written under a temporary name, mapped at full size.
  llvm::Expected<std::unique_ptr<MappedOutputFile>> output =
      MappedOutputFile::create(path, size);
  if (!output)
    return output.takeError();
  writer->output = std::move(*output);
  char *base = writer->output->getData();
  uint64_t headerSize = text.size();
  for (int i = 0; i < 8; ++i)
    base[i] = static_cast<char>(headerSize >> (8 * i));
  std::memcpy(base + 8, text.data(), text.size());
  return writer;
}

char *SafetensorsWriter::getData(llvm::StringRef name) {
  auto it = indexByName.find(name);
  if (it == indexByName.end())
    return nullptr;
  return output->getData() + dataStart + tensors[it->second].begin;
}

llvm::Error SafetensorsWriter::flush(bool durable) {
  return output->flush(durable);
}

llvm::Error SafetensorsWriter::commit() { return output->commit(); }

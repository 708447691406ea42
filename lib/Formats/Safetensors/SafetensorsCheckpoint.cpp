//===- SafetensorsCheckpoint.cpp - Safetensors files as a checkpoint ------===//

#include "ucp/Formats/Safetensors/SafetensorsCheckpoint.h"
#include "ucp/Formats/Json/JsonReading.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <map>

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

Error SafetensorsCheckpoint::addFile(std::unique_ptr<SafetensorsReader> file) {
  files.push_back(std::move(file));
  const SafetensorsReader &reader = *files.back();
  for (const TensorInfo &info : reader.getTensors()) {
    for (auto [other, otherInfo] : where)
      if (otherInfo->name == info.name)
        return makeError(reader.getPath(), "holds '" + info.name + "', which " +
                                               other->getPath() + " holds too");
    CheckpointTensor tensor;
    tensor.name = info.name;
    tensor.map = getWholeTensorMap(info.name, info.shape);
    tensor.states.push_back({TensorState::Weight, info.dtype});
    tensors.push_back(std::move(tensor));
    where.push_back({&reader, &info});
  }
  return Error::success();
}

Error SafetensorsCheckpoint::openIndexed(llvm::StringRef index) {
  Expected<std::unique_ptr<llvm::MemoryBuffer>> text = readInputFile(index);
  if (!text)
    return text.takeError();
  auto inIndex = [&](Error error) {
    return makeError(index, llvm::toString(std::move(error)));
  };
  Expected<llvm::json::Value> json = parseJson((*text)->getBuffer());
  if (!json)
    return inIndex(json.takeError());
  JsonPath root;
  Expected<const llvm::json::Object *> object = getObject(*json, root);
  if (!object)
    return inIndex(object.takeError());
  Expected<const llvm::json::Object *> weights =
      getObjectAt(**object, "weight_map", root);
  if (!weights)
    return inIndex(weights.takeError());
  // Each file once, in the order of the names it holds.
  std::map<std::string, std::vector<std::string>> named;
  for (const auto &[name, value] : **weights) {
    JsonPath at = root.field("weight_map").field(name);
    std::optional<llvm::StringRef> file = value.getAsString();
    if (!file)
      return inIndex(
          at.error("expected a file name, not " + getKindName(value)));
    // A bare file name of the folder: the index may not point elsewhere.
    if (file->empty() || path::filename(*file) != *file || *file == "." ||
        *file == "..")
      return inIndex(at.error("'" + *file + "' is not a file of the folder"));
    named[file->str()].push_back(name.str());
  }
  for (const auto &[file, names] : named) {
    llvm::SmallString<256> where(this->path);
    path::append(where, file);
    Expected<std::unique_ptr<SafetensorsReader>> reader =
        SafetensorsReader::open(where);
    if (!reader)
      return reader.takeError();
    for (const std::string &name : names)
      if (!(*reader)->find(name))
        return makeError(where, "holds no '" + name + "', which " + index +
                                    " says it does");
    for (const TensorInfo &info : (*reader)->getTensors())
      if (!llvm::is_contained(names, info.name))
        return makeError(where, "holds '" + info.name + "', which " + index +
                                    " does not name");
    if (Error error = addFile(std::move(*reader)))
      return error;
  }
  return Error::success();
}

Expected<std::unique_ptr<SafetensorsCheckpoint>>
SafetensorsCheckpoint::open(llvm::StringRef path) {
  auto checkpoint =
      std::unique_ptr<SafetensorsCheckpoint>(new SafetensorsCheckpoint());
  checkpoint->path = path.str();
  if (!fs::is_directory(path)) {
    Expected<std::unique_ptr<SafetensorsReader>> file =
        SafetensorsReader::open(path);
    if (!file)
      return file.takeError();
    if (Error error = checkpoint->addFile(std::move(*file)))
      return std::move(error);
    return checkpoint;
  }
  llvm::SmallString<256> index(path);
  path::append(index, kSafetensorsIndexName);
  if (fs::exists(index)) {
    if (Error error = checkpoint->openIndexed(index))
      return std::move(error);
    return checkpoint;
  }
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; it != end && !ec;
       it.increment(ec))
    if (path::extension(it->path()) == ".safetensors")
      names.push_back(it->path());
  if (ec)
    return makeError(path, ec.message());
  if (names.empty())
    return makeError(path, "holds no .safetensors file and no " +
                               kSafetensorsIndexName);
  llvm::sort(names);
  for (const std::string &name : names) {
    Expected<std::unique_ptr<SafetensorsReader>> file =
        SafetensorsReader::open(name);
    if (!file)
      return file.takeError();
    if (Error error = checkpoint->addFile(std::move(*file)))
      return std::move(error);
  }
  return checkpoint;
}

const char *SafetensorsCheckpoint::getShard(size_t index, TensorState state,
                                            int64_t rank) const {
  auto [file, info] = where[index];
  return file->getData(*info);
}

const llvm::MemoryBuffer *
SafetensorsCheckpoint::getShardBuffer(size_t index, TensorState state,
                                      int64_t rank) const {
  return &where[index].first->getBuffer();
}

std::vector<std::string> SafetensorsCheckpoint::getFiles() const {
  std::vector<std::string> paths;
  for (const std::unique_ptr<SafetensorsReader> &file : files)
    paths.push_back(file->getPath().str());
  return paths;
}

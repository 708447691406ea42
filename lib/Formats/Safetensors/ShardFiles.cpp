//===- ShardFiles.cpp - A map set's shard files as a checkpoint -----------===//

#include "ucp/Formats/Safetensors/ShardFiles.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/FileSystem.h"

#include <set>

using namespace ucp;
using llvm::Expected;

/// Whether a file's tensor of shape `a` can be read as a shard of shape `b`
/// (or the reverse) with as many elements: the same extents once those of 1
/// are dropped, or one of them flat, as flattened (ZeRO) buffers are. Other
/// shapes mean that the file's writer saw another layout, for example a
/// transposed weight, which the same bytes read row-major would scramble.
static bool isSameShapeOrFlat(llvm::ArrayRef<int64_t> a,
                              llvm::ArrayRef<int64_t> b) {
  auto squeeze = [](llvm::ArrayRef<int64_t> shape) {
    Extents extents;
    llvm::copy_if(shape, std::back_inserter(extents),
                  [](int64_t extent) { return extent != 1; });
    return extents;
  };
  Extents squeezedA = squeeze(a), squeezedB = squeeze(b);
  return squeezedA == squeezedB || squeezedA.size() <= 1 ||
         squeezedB.size() <= 1;
}

llvm::Error
ShardFilesCheckpoint::openFiles(const std::map<int64_t, std::string> &files) {
  // Every rank file this process holds: those a shard needs must exist,
  // and the others are read too when present, so that a tensor no map
  // describes is found wherever it is.
  std::set<int64_t> neededRanks;
  for (const CheckpointTensor &tensor : tensors)
    for (const Shard &shard : tensor.map.shards)
      neededRanks.insert(shard.rank);
  for (const auto &[rank, path] : files) {
    if (!holds(rank) ||
        (!neededRanks.count(rank) && !llvm::sys::fs::exists(path)))
      continue;
    Expected<std::unique_ptr<SafetensorsReader>> reader =
        SafetensorsReader::open(path);
    if (!reader)
      return reader.takeError();
    readers[rank] = std::move(*reader);
  }
  return llvm::Error::success();
}

llvm::Error ShardFilesCheckpoint::checkShards(size_t index) {
  const ParamMap &map = tensors[index].map;
  std::optional<DType> &dtype = read[index];
  for (const Shard &shard : map.shards) {
    if (!holds(shard.rank))
      continue;
    auto reader = readers.find(shard.rank);
    if (reader == readers.end())
      return makeError("parameter '" + map.name + "': rank " +
                       std::to_string(shard.rank) + " has no file");
    const TensorInfo *tensor = reader->second->find(map.name);
    if (!tensor)
      return makeError(reader->second->getPath() + ": parameter '" + map.name +
                       "' of " + options.mapOrigin + " is not in the file");
    int64_t elements = getNumElements(shard.shape).value_or(0);
    bool sameCount = getNumElements(tensor->shape).value_or(-1) == elements;
    if (!sameCount || !isSameShapeOrFlat(tensor->shape, shard.shape))
      return makeError(reader->second->getPath() + ": tensor '" + tensor->name +
                       "' has shape " + formatList(tensor->shape) +
                       " but the shard of rank " + std::to_string(shard.rank) +
                       " in " + options.mapOrigin + " is " +
                       formatList(shard.shape) +
                       (sameCount ? " (as many elements in another shape: a "
                                    "transposed tensor, or another layout?)"
                                  : ""));
    if (dtype && *dtype != tensor->dtype)
      return makeError("parameter '" + map.name + "' is " +
                       getSafetensorsName(*dtype).str() + " on one rank and " +
                       getSafetensorsName(tensor->dtype).str() + " on rank " +
                       std::to_string(shard.rank));
    dtype = tensor->dtype;
    bytesRead += tensor->end - tensor->begin;
  }
  return llvm::Error::success();
}

llvm::Error ShardFilesCheckpoint::checkNothingElse() const {
  // Every tensor of every file is some shard of the map: a rank's file may
  // hold only the parameters the map gives that rank a shard of.
  std::set<std::pair<int64_t, llvm::StringRef>> mapped;
  for (const CheckpointTensor &tensor : tensors)
    for (const Shard &shard : tensor.map.shards)
      mapped.insert({shard.rank, tensor.name});
  for (const auto &[rank, reader] : readers)
    for (const TensorInfo &tensor : reader->getTensors())
      if (!mapped.count({rank, tensor.name}))
        return makeError(reader->getPath() + ": tensor '" + tensor.name +
                         "' is " +
                         (llvm::any_of(tensors,
                                       [&](const CheckpointTensor &held) {
                                         return held.name == tensor.name;
                                       })
                              ? "in the map, but the map gives rank " +
                                    std::to_string(rank) + " no shard of it"
                              : std::string("not in the map")) +
                         " (--ignore-extra-tensors copies nothing for it)");
  return llvm::Error::success();
}

Expected<std::unique_ptr<ShardFilesCheckpoint>>
ShardFilesCheckpoint::open(llvm::ArrayRef<ParamMap> maps,
                           const std::map<int64_t, std::string> &files,
                           Options options) {
  auto checkpoint =
      std::unique_ptr<ShardFilesCheckpoint>(new ShardFilesCheckpoint());
  checkpoint->options = std::move(options);
  for (const ParamMap &map : maps) {
    CheckpointTensor tensor;
    tensor.name = map.name;
    tensor.map = map;
    checkpoint->tensors.push_back(std::move(tensor));
  }
  checkpoint->read.resize(maps.size());
  if (llvm::Error error = checkpoint->openFiles(files))
    return std::move(error);
  for (size_t index = 0; index < maps.size(); ++index)
    if (llvm::Error error = checkpoint->checkShards(index))
      return std::move(error);
  if (!checkpoint->options.ignoreExtraTensors)
    if (llvm::Error error = checkpoint->checkNothingElse())
      return std::move(error);
  // A process that read a shard knows the type; setType settles the rest.
  for (size_t index = 0; index < maps.size(); ++index)
    if (checkpoint->read[index])
      checkpoint->setType(index, *checkpoint->read[index]);
  return checkpoint;
}

void ShardFilesCheckpoint::setType(size_t index, DType type) {
  tensors[index].states = {{TensorState::Weight, type}};
}

const char *ShardFilesCheckpoint::getShard(size_t index, TensorState state,
                                           int64_t rank) const {
  if (!holds(rank))
    return nullptr;
  const SafetensorsReader &reader = *readers.at(rank);
  return reader.getData(*reader.find(tensors[index].name));
}

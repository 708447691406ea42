//===- ModelTensors.cpp - A DeepSpeed checkpoint as a CheckpointSource ----===//
//
// The trainable parameters come first, in getParams() order, each with
// its map over the grid and the states its group holds; then the module
// buffers named by buffer_names, whole (TP rank 0's file, as zero_to_fp32
// takes them), and the frozen parameters (FrozenTensors.cpp);
// shared_params gives the aliases.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringSet.h"

#include <cstring>

using namespace ucp;
using llvm::Error;
using llvm::Expected;

Error DeepSpeedReader::addSavedTensor(llvm::StringRef name,
                                      const PickleCursor &value,
                                      std::optional<Extents> shape,
                                      CheckpointTensor::Role role) {
  const TorchFile &model = *checkpoint.modelFiles.front();
  Expected<PickleRef> ref = value.getTensor();
  if (!ref)
    return makeError(model.getPath(), llvm::toString(ref.takeError()));
  TensorData saved = model.getTensor(*ref);
  Extents logical = shape.value_or(saved.shape);
  if (getNumElements(logical) != getNumElements(saved.shape))
    return makeError(model.getPath(),
                     "'" + name + "' holds " + formatList(saved.shape) +
                         ", not its shape " + formatList(logical));
  // A view that is not row-major (rare: a buffer registered as a slice)
  // is read once into memory of its own.
  const char *data = makeRowMajor(saved, model, checkpoint.savedCopies,
                                  checkpoint.readIntoMemory)
                         .data;
  CheckpointTensor tensor;
  tensor.name = name.str();
  tensor.role = role;
  tensor.map = getWholeTensorMap(name, logical);
  tensor.states.push_back({TensorState::Weight, saved.dtype});
  checkpoint.tensors.push_back(std::move(tensor));
  checkpoint.savedShards.push_back({{&model, data}});
  return Error::success();
}

Error DeepSpeedReader::addSavedTensors() {
  const TorchFile &model = *checkpoint.modelFiles.front();
  PickleCursor root(model.getDocument());
  auto inModel = [&](Error error) {
    return makeError(model.getPath(), llvm::toString(std::move(error)));
  };
  Expected<PickleCursor> module = root.at("module");
  if (!module)
    return inModel(module.takeError());
  if (std::optional<PickleCursor> names = root.find("buffer_names")) {
    Expected<std::vector<PickleCursor>> items = names->getItems();
    if (!items)
      return inModel(items.takeError());
    for (const PickleCursor &item : *items) {
      Expected<std::string> name = item.getString();
      Expected<PickleCursor> value =
          name ? module->at(*name) : Expected<PickleCursor>(name.takeError());
      if (!value)
        return inModel(value.takeError());
      if (Error error = addSavedTensor(*name, *value, std::nullopt,
                                       CheckpointTensor::Role::Buffer))
        return error;
    }
  }
  return addFrozenParams(root, *module);
}

Error DeepSpeedReader::addAliases() {
  // shared_params: a tied name -> the parameter it is.
  const TorchFile &model = *checkpoint.modelFiles.front();
  PickleCursor root(model.getDocument());
  std::optional<PickleCursor> shared = root.find("shared_params");
  if (!shared || !shared->is(PickleValue::Dict))
    return Error::success();
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      shared->getStringItems();
  if (!items)
    return makeError(model.getPath(), llvm::toString(items.takeError()));
  for (const auto &[alias, target] : *items) {
    Expected<std::string> name = target.getString();
    if (!name)
      return makeError(model.getPath(), llvm::toString(name.takeError()));
    if (llvm::none_of(checkpoint.tensors, [&](const CheckpointTensor &t) {
          return t.name == *name;
        }))
      return makeError(model.getPath(),
                       llvm::toString(shared->fail(
                           "ties '" + alias + "' to '" + *name +
                           "', which the checkpoint does not hold")));
    checkpoint.aliases.push_back({alias, *name});
  }
  return Error::success();
}

Error DeepSpeedReader::buildTensors() {
  for (const DeepSpeedParam &param : checkpoint.params) {
    CheckpointTensor tensor;
    tensor.name = param.name;
    tensor.map = param.map;
    for (TensorState state : kOptimizerStates)
      if (checkpoint.hasState(param.group, state))
        tensor.states.push_back(
            {state, checkpoint.getFragment(param, 0, state).dtype});
    checkpoint.tensors.push_back(std::move(tensor));
  }
  if (Error error = addSavedTensors())
    return error;
  return addAliases();
}

const char *DeepSpeedCheckpoint::getShard(size_t index, TensorState state,
                                          int64_t rank) const {
  if (index < params.size())
    return getFragment(params[index], rank, state).data;
  return savedShards[index - params.size()][rank].data;
}

const llvm::MemoryBuffer *
DeepSpeedCheckpoint::getShardBuffer(size_t index, TensorState state,
                                    int64_t rank) const {
  if (index < params.size())
    return getFragmentBuffer(params[index], rank, state);
  const SavedShard &saved = savedShards[index - params.size()][rank];
  return getBufferHolding(saved.file->getBuffer(), saved.data);
}

Error DeepSpeedCheckpoint::checkComplete() const {
  return incomplete.empty() ? Error::success() : makeError(incomplete);
}

std::vector<std::string> DeepSpeedCheckpoint::getFiles() const {
  std::vector<std::string> paths;
  llvm::StringSet<> seen;
  auto add = [&](llvm::StringRef path) {
    if (seen.insert(path).second)
      paths.push_back(path.str());
  };
  for (const std::unique_ptr<TorchFile> &file : modelFiles)
    add(file->getPath());
  // A Universal folder's optimizer templates are made in memory, named
  // after its zero/optimizer_state.pt, which is read.
  for (const RankFile &rank : ranks)
    add(rank.file->getPath());
  for (const std::unique_ptr<TorchFile> &file : layerFiles)
    add(file->getPath());
  for (const std::vector<std::string> &layer : expertFiles)
    for (const std::string &file : layer)
      add(file);
  for (const std::array<std::unique_ptr<TorchFile>, 3> &states : universalFiles)
    for (const std::unique_ptr<TorchFile> &file : states)
      if (file)
        add(file->getPath());
  return paths;
}

std::string DeepSpeedCheckpoint::getShardFile(size_t index, TensorState state,
                                              int64_t rank) const {
  if (index >= params.size())
    return savedShards[index - params.size()][rank].file->getPath().str();
  if (state == TensorState::Weight)
    return modelFiles.front()->getPath().str();
  if (universal)
    return universalFiles[index][static_cast<size_t>(state)]->getPath().str();
  return ranks[rank].file->getPath().str();
}

std::vector<CheckpointSource::Padding> DeepSpeedCheckpoint::getPaddings() const {
  std::vector<Padding> paddings;
  if (universal || stage == 3)
    return paddings;
  for (auto [r, rank] : llvm::enumerate(ranks)) {
    for (size_t g = 0; g < rank.partitions.size(); ++g) {
      int64_t used = 0;
      for (const DeepSpeedParam &param : params)
        if (param.group == g && r < param.slices.size() &&
            param.slices[r].count)
          used = std::max(used, param.slices[r].offset + param.slices[r].count);
      for (TensorState state : kOptimizerStates) {
        if (!hasState(g, state))
          continue;
        TensorData partition = rank.file->getTensor(
            rank.partitions[g][static_cast<size_t>(state)]);
        int64_t length = getNumElements(partition.shape).value_or(0);
        const char *data =
            partition.data + used * getElementSize(partition.dtype);
        if (length > used)
          paddings.push_back({rank.file->getPath().str(),
                              "parameter group " + std::to_string(g) + "'s " +
                                  getStateName(state).str() + " partition",
                              used, partition.dtype, data, length - used,
                              data - rank.file->getBuffer().getBufferStart()});
      }
    }
  }
  return paddings;
}

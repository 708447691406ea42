//===- PipelineLayers.cpp - A pipeline run's stages and layer files -------===//
//
// DeepSpeed's PipelineModule saves its module weights apart from the model
// states (whose `module` is None): one file per layer,
// `layer_<index:02d>-model_states.pt`, holding that layer's state_dict
// under its local names (`ln.weight`). The optimizer names the same
// weights `<index>.<local name>` (`3.ln.weight`), and a tied module
// (TiedLayerSpec) `tied_modules.<key>.<local name>`, held by every stage
// that uses it; its weights are saved once, in the layer file of one of
// the layers that use it.
//
// The model states record the grid in checkpoint_parallel_dimensions
// (`pp_degree`, `tp_degree`, whose product is mp_world_size); a file's
// mp_rank is then its stage's TP ranks counted stage-major.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/DeepSpeed/PipelineLayout.h"
#include "ucp/Formats/Torch/PickleCursor.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;

Expected<std::pair<int64_t, int64_t>>
ucp::readPipelineDegrees(const TorchFile &first, const ModelStates &grid) {
  int64_t mp = grid.mpWorldSize;
  if (!grid.ppTpDegrees)
    return std::pair{int64_t(1), mp};
  auto [pp, tp] = *grid.ppTpDegrees;
  if (pp < 1 || tp < 1 || pp > mp || tp > mp || pp * tp != mp)
    return makeError(first.getPath() +
                     ": checkpoint_parallel_dimensions gives pp_degree " +
                     std::to_string(pp) + " and tp_degree " +
                     std::to_string(tp) + ", but mp_world_size is " +
                     std::to_string(mp) +
                     " (the TP ranks of every stage: their product)");
  return std::pair{pp, tp};
}

Expected<std::pair<int64_t, int64_t>>
ucp::getPipelineGrid(const FolderScan &scan, const TorchFile &first,
                     const ModelStates &grid) {
  Expected<std::pair<int64_t, int64_t>> degrees =
      readPipelineDegrees(first, grid);
  if (!degrees)
    return degrees.takeError();
  auto [pp, tp] = *degrees;
  auto refuse = [&](const std::string &why) {
    return makeError(first.getPath() + ": " + why);
  };
  bool layers = !scan.layerFiles.empty();
  if (pp > 1 && !layers)
    return refuse("a pipeline of " + std::to_string(pp) +
                  " stages, but the folder holds no layer files "
                  "(layer_XX-model_states.pt), which hold its module weights");
  if (layers && scan.zero3)
    return makeError(scan.layerFiles.begin()->second.begin()->second +
                     ": a pipeline layer file beside ZeRO-3 files, but "
                     "DeepSpeed runs no pipeline with ZeRO-3: the folder "
                     "mixes the files of two runs");
  if (layers && tp > 1)
    return refuse("a pipeline with tensor parallelism (" + std::to_string(pp) +
                  " stages x " + std::to_string(tp) +
                  " TP ranks), which is not read yet: no such checkpoint "
                  "of DeepSpeed's has been checked against its layout");
  return std::pair{pp, tp};
}

/// Reads the state_dict of layer file `index` into `entries`.
static Error readLayerEntries(const TorchFile &file, size_t index,
                              int64_t layer, std::vector<LayerEntry> &entries) {
  PickleCursor root(file.getDocument());
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      root.getStringItems();
  if (!items)
    return makeError(file.getPath(), llvm::toString(items.takeError()));
  for (const auto &[key, value] : *items) {
    Expected<PickleRef> tensor = value.getTensor();
    if (!tensor)
      return makeError(file.getPath(), "'" + key + "': " +
                                           llvm::toString(tensor.takeError()));
    TensorData data = file.getTensor(*tensor);
    if (!isFloatingPoint(data.dtype))
      return makeError(file.getPath(),
                       "'" + key + "' is a " +
                           getSafetensorsName(data.dtype).str() +
                           " tensor, not a module weight");
    entries.push_back({index, layer, key, *tensor, data.shape});
  }
  return Error::success();
}

Error DeepSpeedReader::openLayerFiles() {
  for (const auto &[layer, ranks] : files.layerFiles) {
    Expected<std::unique_ptr<TorchFile>> file =
        TorchFile::open(ranks.begin()->second);
    if (!file)
      return file.takeError();
    size_t index = checkpoint.layerFiles.size();
    if (Error error = readLayerEntries(**file, index, layer, layerEntries))
      return error;
    fileOfLayer[layer] = index;
    checkpoint.layerFiles.push_back(std::move(*file));
  }
  return Error::success();
}

std::vector<LayerEntry *>
DeepSpeedReader::findLayerEntries(llvm::StringRef name,
                                  std::optional<int64_t> elements) {
  std::vector<LayerEntry *> found;
  if (std::optional<std::pair<int64_t, std::string>> split =
          splitLayerName(name)) {
    auto file = fileOfLayer.find(split->first);
    for (LayerEntry &entry : layerEntries)
      if (file != fileOfLayer.end() && entry.file == file->second &&
          entry.key == split->second)
        found.push_back(&entry);
    return found;
  }
  // A tied weight is saved under its local name by a layer that uses it.
  if (name.starts_with("tied_modules."))
    for (LayerEntry &entry : layerEntries)
      if (!entry.layerWeight && name.ends_with("." + entry.key) &&
          (!elements || getNumElements(entry.shape) == elements))
        found.push_back(&entry);
  return found;
}

Error DeepSpeedReader::deriveParamShapes() {
  for (int64_t m = 0; m < files.mp; ++m) {
    ModelStates &model = models[m];
    if (model.shapesRecorded)
      continue;
    const std::string &path = files.modelFiles[m];
    if (files.layerFiles.empty())
      return makeError(path + ": param_shapes is None, and only a pipeline "
                              "run's layer files could give the shapes");
    // Each group's parameters in flattening order: the fragments of every
    // DP rank, in order.
    for (size_t g = 0; g < optimizers[m].groups.size(); ++g) {
      std::vector<GroupParam> &params = model.groups.emplace_back();
      std::map<std::string, size_t> index;
      for (int64_t d = 0; d < files.dp; ++d) {
        const TensorStates &rank = optimizers[d * files.mp + m];
        if (g >= rank.groups.size())
          break; // Refused by checkOneRun, naming the file.
        for (const auto &[name, slice] : rank.groups[g].slices) {
          auto [it, added] = index.try_emplace(name, params.size());
          if (added)
            params.push_back({name, {}, 0});
          params[it->second].elements += slice.first;
        }
      }
      for (GroupParam &param : params) {
        std::vector<LayerEntry *> found =
            findLayerEntries(param.name, param.elements);
        if (found.empty() ||
            getNumElements(found.front()->shape) != param.elements)
          return makeError(
              path + ": param_shapes is None, and no layer file holds '" +
              param.name + "' of the " + std::to_string(param.elements) +
              " elements " + files.optimizerFiles[m] +
              " gives it, whose shape would say it");
        param.shape = found.front()->shape;
      }
    }
  }
  return Error::success();
}

Error DeepSpeedReader::findLayerWeights() {
  if (files.layerFiles.empty())
    return Error::success();
  auto pathOf = [&](const LayerEntry &entry) {
    return checkpoint.layerFiles[entry.file]->getPath().str();
  };
  auto describeStages = [&](llvm::ArrayRef<int64_t> stages) {
    return (stages.size() > 1 ? "stages " : "stage ") +
           llvm::join(llvm::map_range(
                          stages, [](int64_t s) { return std::to_string(s); }),
                      ", ");
  };
  std::vector<DeepSpeedParam> &params = checkpoint.params;
  checkpoint.layerWeights.resize(params.size());
  std::vector<size_t> tied;
  // The parameters of one layer first: their keys are not tied weights.
  for (size_t p = 0; p < params.size(); ++p) {
    const DeepSpeedParam &param = params[p];
    llvm::ArrayRef<int64_t> stages = paramStages[p];
    const Extents &shape = param.tpShapes[stages.front()];
    if (llvm::StringRef(param.name).starts_with("tied_modules.")) {
      tied.push_back(p);
      continue;
    }
    std::optional<std::pair<int64_t, std::string>> split =
        splitLayerName(param.name);
    if (!split)
      return makeError(files.modelFiles[stages.front()] + ": parameter '" +
                       param.name +
                       "' is neither <layer>.<name> nor "
                       "tied_modules.<key>.<name>, so no layer file is known "
                       "to hold its module weight");
    if (!fileOfLayer.count(split->first))
      return makeError(files.modelFiles[stages.front()] + ": " +
                       describeStages(stages) + " holds parameter '" +
                       param.name + "', but its layer file layer_" +
                       llvm::formatv("{0:d2}", split->first).str() +
                       "-model_states.pt is missing from the folder");
    std::vector<LayerEntry *> found =
        findLayerEntries(param.name, std::nullopt);
    const std::string &path =
        checkpoint.layerFiles[fileOfLayer[split->first]]->getPath().str();
    if (found.empty())
      return makeError(path + ": holds no '" + split->second +
                       "', the module weight of parameter '" + param.name +
                       "' (a layer file of another model?)");
    LayerEntry *entry = found.front();
    if (entry->shape != shape)
      return makeError(path + ": its '" + split->second + "' is " +
                       formatList(entry->shape) + ", but " +
                       files.modelFiles[stages.front()] + " gives parameter '" +
                       param.name + "' the shape " + formatList(shape));
    entry->layerWeight = true;
    for (int64_t stage : stages)
      checkpoint.layerWeights[p].push_back({stage, entry->file, entry->tensor});
  }
  // A tied parameter's weight is saved under its local name by a layer
  // that uses it; every such weight is compared with every stage's copy.
  for (size_t p : tied) {
    const DeepSpeedParam &param = params[p];
    llvm::ArrayRef<int64_t> stages = paramStages[p];
    const Extents &shape = param.tpShapes[stages.front()];
    for (LayerEntry *entry : findLayerEntries(param.name, std::nullopt)) {
      if (entry->shape != shape)
        continue;
      entry->tiedWeight = true;
      for (int64_t stage : stages)
        checkpoint.layerWeights[p].push_back(
            {stage, entry->file, entry->tensor});
    }
    if (checkpoint.layerWeights[p].empty())
      return makeError(files.modelFiles[stages.front()] + ": " +
                       describeStages(stages) + " hold tied parameter '" +
                       param.name + "' " + formatList(shape) +
                       ", but no layer file holds its module weight (a "
                       "layer file is missing?)");
  }
  for (const LayerEntry &entry : layerEntries)
    if (!entry.layerWeight && !entry.tiedWeight &&
        checkpoint.incomplete.empty())
      checkpoint.incomplete =
          pathOf(entry) + ": '" + entry.key + "' of layer " +
          std::to_string(entry.layer) +
          " is no trainable parameter (a buffer or frozen weight), which "
          "is not exported yet";
  return Error::success();
}

Error DeepSpeedReader::checkTiedCopies() const {
  if (!share.compareWeights)
    return Error::success();
  // This process's share, as the weights' comparison divides it.
  std::vector<int> owners = getCheckOwners(checkpoint.params, share.processes);
  for (size_t p = 0; p < checkpoint.params.size(); ++p) {
    const DeepSpeedParam &param = checkpoint.params[p];
    llvm::ArrayRef<int64_t> stages = paramStages[p];
    if (stages.size() < 2 || owners[p] != share.process)
      continue;
    for (TensorState state : kOptimizerStates) {
      if (!checkpoint.hasState(param.group, state))
        continue;
      std::map<int64_t, const char *> shards;
      std::vector<std::string> holders;
      for (const Shard &shard : param.map.shards) {
        shards[shard.rank] = checkpoint.getFragment(param, shard.rank, state).data;
        holders.push_back("rank " + std::to_string(shard.rank) + " is " +
                          files.optimizerFiles[shard.rank]);
      }
      if (Error error = checkReplicas(param.map, shards,
                                      getElementSize(DType::F32)))
        return makeError(llvm::toString(std::move(error)) + ", in its " +
                         getStateName(state) + " (" + llvm::join(holders, ", ") +
                         "): the copies of a tied parameter on its stages " +
                         formatList(stages) +
                         " are equal in DeepSpeed, so a file is of another "
                         "run or step");
    }
  }
  return Error::success();
}

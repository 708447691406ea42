//===- RetargetLayerFiles.cpp - A pipeline's layer files at the target ----===//
//
// A PipelineModule saves each layer's module weights in a file of its own,
// `layer_<index:02d>-model_states.pt`: an OrderedDict of the layer's
// local names, each tensor a clone with a storage of its own. The files
// are the same at every stage count and DP degree, so a DeepSpeed source's
// are copied. A Universal folder keeps none, and they are made from the
// fp32 masters in the dtype ds_config gives the module. Two things the
// folder does not record are then decided: the order of a layer's keys
// (orderModuleKeys derives it from the optimizer's order, and DeepSpeed's
// load_state_dict does not depend on it), and which layer saves a tied
// module: the first layer --pp-tied names (DeepSpeed saves the module
// where a layer runs it as itself, as an embedding does, not where a layer
// passes a forward_fn, as a tied head does).
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"
#include "ucp/DeepSpeed/PipelineLayout.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace path = llvm::sys::path;

Error Retargeter::planLayerFiles() {
  if (!checkpoint.isPipeline() || !checkpoint.isUniversal())
    return Error::success();
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  // Each layer's keys as the source's stages list them, group by group.
  struct Listed {
    std::vector<std::string> keys;
    std::vector<size_t> groups, params;
  };
  std::map<int64_t, Listed> listed;
  std::map<int64_t, std::string> tiedLayers;
  std::vector<bool> seen(params.size(), false);
  for (int64_t s = 0; s < checkpoint.getPipelineDegree(); ++s)
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t p : checkpoint.getStageGroup(s, g)) {
        if (seen[p])
          continue;
        seen[p] = true;
        llvm::StringRef name = params[p].name;
        int64_t layer = 0;
        std::string key;
        if (std::optional<llvm::StringRef> tied = getTiedKey(name)) {
          auto found = options.ppTiedLayers.find(tied->str());
          if (found == options.ppTiedLayers.end() || found->second.empty())
            return makeError(
                "parameter '" + name + "' is of tied module '" + *tied +
                "', which DeepSpeed saves in the layer file of a layer "
                "using it, and a Universal folder keeps no layer files nor "
                "which layers use it: give --pp-tied " +
                *tied + "=L1,L2,... (its first layer's file holds it: the "
                        "embedding's)");
          layer = found->second.front();
          key = name.drop_front(tied->end() + 1 - name.begin()).str();
          auto [other, added] = tiedLayers.try_emplace(layer, tied->str());
          if (!added && other->second != *tied)
            return makeError("--pp-tied: tied modules '" + other->second +
                             "' and '" + *tied + "' both name layer " +
                             std::to_string(layer) +
                             " first, whose one file cannot hold both");
        } else if (std::optional<std::pair<int64_t, std::string>> split =
                       splitLayerName(name)) {
          std::tie(layer, key) = *split;
        } else {
          return makeError("parameter '" + name +
                           "' names no layer (<layer>.<name>) and no tied "
                           "module, so no layer file is known to hold it");
        }
        Listed &entry = listed[layer];
        entry.keys.push_back(std::move(key));
        entry.groups.push_back(g);
        entry.params.push_back(p);
      }
  for (const auto &[layer, entry] : listed) {
    auto tied = tiedLayers.find(layer);
    if (tied != tiedLayers.end() &&
        llvm::any_of(entry.params, [&](size_t p) {
          return !getTiedKey(params[p].name);
        }))
      return makeError("--pp-tied " + tied->second + ": layer " +
                       std::to_string(layer) +
                       " has parameters of its own, so it is not tied module '" +
                       tied->second + "' itself, whose file would hold it");
    for (size_t i : orderModuleKeys(entry.keys, entry.groups)) {
      layerParams[layer].push_back(entry.params[i]);
      layerKeys[layer].push_back(entry.keys[i]);
    }
  }
  return Error::success();
}

size_t Retargeter::getLayerFileCount() const {
  return checkpoint.isUniversal() ? layerParams.size()
                                  : checkpoint.getLayerFiles().size();
}

Error Retargeter::writeMastersFile(llvm::StringRef file,
                                   PickleDocument document,
                                   llvm::ArrayRef<MasterRun> runs, DType type) {
  Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(file, std::move(document));
  if (!writer)
    return writer.takeError();
  std::vector<char> bytes;
  for (auto [i, run] : llvm::enumerate(runs)) {
    TensorData masters =
        checkpoint.getFragment(*run.param, 0, TensorState::Master);
    const float *first =
        reinterpret_cast<const float *>(masters.data) + run.first;
    bytes.resize(run.elements * getElementSize(type));
    narrowFloat32(first, run.elements, type, bytes.data());
    checkpoint.releaseFragmentPages(*run.param, 0, TensorState::Master,
                                    reinterpret_cast<const char *>(first),
                                    run.elements * sizeof(float));
    if (Error error = (*writer)->writeStorage(
            std::to_string(i), {llvm::StringRef(bytes.data(), bytes.size())}))
      return error;
    bytesWritten += bytes.size();
  }
  if (Error error = (*writer)->commit(/*durable=*/false))
    return error;
  ++filesWritten;
  return Error::success();
}

Error Retargeter::writeLayerFilesFromMasters(llvm::StringRef folder) {
  DType type = checkpoint.getModuleType();
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  for (const auto &[layer, weights] : layerParams) {
    PickleBuilder b;
    std::vector<std::pair<PickleRef, PickleRef>> items;
    std::vector<MasterRun> runs;
    for (auto [i, p] : llvm::enumerate(weights)) {
      const Extents &shape = params[p].tpMap.logicalShape;
      int64_t elements = *getNumElements(shape);
      PickleRef storage = b.storage(std::to_string(i), type, elements);
      items.push_back(
          {b.string(layerKeys[layer][i]),
           b.tensor(storage, 0, shape, getRowMajorStrides(shape), false)});
      runs.push_back({&params[p], 0, elements});
    }
    llvm::SmallString<256> file(folder);
    path::append(file, llvm::formatv("layer_{0:d2}-model_states.pt", layer)
                           .str());
    if (Error error =
            writeMastersFile(file, b.finish(b.dict(items, true)), runs, type))
      return error;
  }
  return Error::success();
}

Error Retargeter::writeLayerFiles(llvm::StringRef folder) {
  if (checkpoint.isUniversal())
    return writeLayerFilesFromMasters(folder);
  for (const std::unique_ptr<TorchFile> &file : checkpoint.getLayerFiles())
    if (Error error = copySourceFile(file->getPath(), folder))
      return error;
  return Error::success();
}

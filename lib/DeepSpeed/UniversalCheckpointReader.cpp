//===- UniversalCheckpointReader.cpp - A Universal checkpoint, read -------===//
//
// A Universal checkpoint folder holds the source run's model states (byte
// copies, so its TP degree, param_shapes and universal_checkpoint_info),
// each parameter's full fp32 weights and Adam moments in
// `zero/<name>/<state>.pt` (ZeRO-1/2 with TP: a dict whose `param` is the
// tensor; ZeRO-3 without TP: the bare flat tensor), its step in `step.pt`
// (ZeRO-1/2), and the rest of the optimizer's state in
// `zero/optimizer_state.pt`. It is read as a checkpoint of one DP rank:
// each parameter's map holds the full tensor on rank 0, its TP map comes
// from the model states as for any checkpoint, and the optimizer file each
// TP rank lacks is rebuilt in the source stage's form from
// optimizer_state.pt and the steps, with empty partitions: the template a
// writer fills for the target. An AutoEP expert's file holds the whole
// `[num_experts, ...]` tensor; its EP map is the source's, from the
// layers the model states record.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/Formats/Torch/TorchFileWriter.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

static std::string joinPath(llvm::StringRef a, llvm::StringRef b,
                            llvm::StringRef c = "", llvm::StringRef d = "") {
  llvm::SmallString<256> joined(a);
  for (llvm::StringRef part : {b, c, d})
    if (!part.empty())
      path::append(joined, part);
  return std::string(joined);
}

/// The model-state file of model-parallel rank `m` (DP rank 0's for
/// ZeRO-3).
static std::string getModelFileName(bool zero3, int64_t m) {
  std::string mp = llvm::formatv("{0:d2}", m).str();
  return zero3 ? "zero_pp_rank_0_mp_rank_" + mp + "_model_states.pt"
               : "mp_rank_" + mp + "_model_states.pt";
}

Error DeepSpeedReader::findUniversalFiles(llvm::StringRef folder) {
  for (bool zero3 : {false, true})
    if (fs::is_regular_file(joinPath(folder, getModelFileName(zero3, 0)))) {
      files.zero3 = zero3;
      break;
    } else if (zero3) {
      return makeError(folder + ": neither " + getModelFileName(false, 0) +
                       " nor " + getModelFileName(true, 0) +
                       ": not a Universal checkpoint folder");
    }
  std::string first = joinPath(folder, getModelFileName(files.zero3, 0));
  Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(first);
  if (!file)
    return file.takeError();
  Expected<ModelStates> grid = readModelStates(**file);
  if (!grid)
    return grid.takeError();
  if (std::string error = checkWorldSize(grid->mpWorldSize, "mp_world_size");
      !error.empty())
    return makeError(first + ": " + error);
  Expected<std::pair<int64_t, int64_t>> degrees =
      readPipelineDegrees(**file, *grid);
  if (!degrees)
    return degrees.takeError();
  // A PipelineModule's model states hold no module: its weights were in
  // the layer files, which a Universal folder does not keep.
  std::optional<PickleCursor> module =
      PickleCursor((*file)->getDocument()).find("module");
  checkpoint.pipeline = degrees->first > 1 ||
                        (!files.zero3 && module && module->is(PickleValue::None));
  if (checkpoint.pipeline && (files.zero3 || degrees->second > 1))
    return makeError(first + ": a Universal checkpoint of a pipeline-parallel "
                             "run with " +
                     (files.zero3 ? std::string("ZeRO-3, which DeepSpeed does "
                                                "not run")
                                  : std::to_string(degrees->second) +
                                        " TP ranks per stage, which is not "
                                        "read yet"));
  std::tie(files.pp, files.tp) = *degrees;
  files.mp = grid->mpWorldSize;
  files.dp = 1;
  for (int64_t m = 0; m < files.mp; ++m) {
    files.modelFiles.push_back(
        joinPath(folder, getModelFileName(files.zero3, m)));
    if (!fs::is_regular_file(files.modelFiles.back()))
      return makeError(files.modelFiles.back() + ": missing (" + first +
                       " records " + std::to_string(files.mp) +
                       " model-parallel ranks)");
  }
  if (!fs::is_directory(joinPath(folder, "zero")))
    return makeError(joinPath(folder, "zero") +
                     ": missing: not a Universal checkpoint folder");
  return Error::success();
}

/// The full tensor of a Universal state file: the tensor itself, or the
/// `param` of its dict.
static Expected<TensorData> readUniversalTensor(const TorchFile &file) {
  PickleCursor root(file.getDocument());
  std::optional<PickleCursor> tensor =
      root.is(PickleValue::Tensor) ? std::optional(root) : root.find("param");
  if (!tensor || !tensor->is(PickleValue::Tensor))
    return makeError(file.getPath() +
                     ": neither a tensor nor a dict with a 'param' tensor");
  return file.getTensor(tensor->getRef());
}

Error ucp::checkUniversalFolderName(llvm::StringRef name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_of(llvm::StringRef("/\0", 2)) != llvm::StringRef::npos)
    return makeError("parameter '" + name +
                     "': its name cannot be a folder name (zero/<name>/), "
                     "so it has no place in a Universal checkpoint");
  return Error::success();
}

Error DeepSpeedReader::readUniversalStates(const DeepSpeedParam &param) {
  if (Error error = checkUniversalFolderName(param.name))
    return makeError(files.modelFiles[0] + ": " +
                     llvm::toString(std::move(error)));
  const Extents &full = param.tpMap.logicalShape;
  int64_t elements = *getNumElements(full);
  std::array<std::unique_ptr<TorchFile>, 3> &opened =
      checkpoint.universalFiles.emplace_back();
  std::array<TensorData, 3> &states = checkpoint.universalStates.emplace_back();
  // The moments of a group saved before its first step are not written.
  std::vector<std::string> missing;
  for (TensorState state : kOptimizerStates) {
    std::string name = joinPath(checkpoint.folder, "zero", param.name,
                                (getStateName(state) + ".pt").str());
    if (state != TensorState::Master && !fs::exists(name)) {
      missing.push_back(name);
      continue;
    }
    Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(name);
    if (!file)
      return file.takeError();
    Expected<TensorData> tensor = readUniversalTensor(**file);
    if (!tensor)
      return tensor.takeError();
    // The full tensor (ZeRO-3 without TP keeps it flat), in fp32. Any view
    // torch reads is taken: one that is not row-major (transposed,
    // expanded) is copied once into memory in row-major order.
    if (tensor->dtype != DType::F32 ||
        (tensor->shape != full && tensor->shape != Extents{elements}))
      return makeError(name + ": parameter '" + param.name +
                       "' must be an fp32 tensor of " + formatList(full) +
                       " (its full shape), got " +
                       getSafetensorsName(tensor->dtype).str() + " " +
                       formatList(tensor->shape) + " strides " +
                       formatList(tensor->strides));
    states[static_cast<size_t>(state)] = makeRowMajor(
        *tensor, **file, checkpoint.savedCopies, checkpoint.readIntoMemory);
    opened[static_cast<size_t>(state)] = std::move(*file);
  }
  // Both moments or none, as every parameter of the group.
  bool moments = missing.empty();
  if (missing.size() == 1)
    return makeError(missing.front() + ": missing, beside the other moment");
  if (param.group >= checkpoint.groupMoments.size())
    checkpoint.groupMoments.resize(param.group + 1, moments);
  else if (checkpoint.groupMoments[param.group] != moments)
    return makeError(
        joinPath(checkpoint.folder, "zero", param.name) + ": " +
        (moments ? "holds" : "lacks") + " the Adam moments, which the " +
        "parameters before it in its group " + (moments ? "lack" : "hold"));
  return Error::success();
}

Error DeepSpeedReader::listUniversalParams() {
  // Stage by stage, as the DeepSpeed reader lists them: a parameter that
  // several stages hold (a tied embedding) once.
  std::map<std::string, size_t> byName;
  size_t groups = getModel(0).groups.size();
  for (int64_t stage = 0; stage < files.pp; ++stage) {
    int64_t first = stage * files.tp;
    const std::string &path = files.modelFiles[first];
    if (!getModel(first).shapesRecorded)
      return makeError(path + ": param_shapes is None (BF16_Optimizer in a "
                              "pipeline), so nothing in a Universal folder "
                              "says which parameters each stage and group "
                              "holds; retarget the checkpoint itself "
                              "(ds-retarget), whose optimizer files say");
    if (getModel(first).groups.size() != groups)
      return makeError(path + ": " +
                       std::to_string(getModel(first).groups.size()) +
                       " parameter groups, but " + files.modelFiles[0] +
                       " has " + std::to_string(groups) +
                       ": every stage's optimizer has the same groups");
    // Every TP rank of the stage lists the same parameters.
    for (int64_t t = 1; t < files.tp; ++t)
      for (size_t g = 0; g < groups; ++g)
        if (g >= getModel(first + t).groups.size() ||
            getModel(first + t).groups[g].size() !=
                getModel(first).groups[g].size())
          return makeError(files.modelFiles[first + t] +
                           ": its param_shapes lists other parameters in "
                           "group " +
                           std::to_string(g) + " than " + path + "'s");
    for (size_t g = 0; g < groups; ++g)
      for (size_t p = 0; p < getModel(first).groups[g].size(); ++p) {
        const std::string &name = getModel(first).groups[g][p].name;
        auto [it, added] = byName.try_emplace(name, checkpoint.params.size());
        if (added) {
          DeepSpeedParam &param = checkpoint.params.emplace_back();
          param.name = name;
          param.group = g;
          param.tpShapes.resize(files.mp);
          if (expertGroups.count(g))
            param.expertLayer = expertLayers[g][p];
          paramStages.emplace_back();
        }
        DeepSpeedParam &param = checkpoint.params[it->second];
        std::vector<int64_t> &stages = paramStages[it->second];
        if ((!stages.empty() && stages.back() == stage) || param.group != g)
          return makeError(path + ": param_shapes lists '" + name + "' " +
                           (param.group != g ? "in group " + std::to_string(g) +
                                                   " and in group " +
                                                   std::to_string(param.group)
                                             : std::string("twice")) +
                           ": a parameter is one parameter of one group");
        stages.push_back(stage);
        if (checkpoint.pipeline) {
          auto &stageGroups = checkpoint.stageGroups;
          stageGroups.resize(files.pp, std::vector<std::vector<size_t>>(groups));
          stageGroups[stage][g].push_back(it->second);
        }
        for (int64_t t = 0; t < files.tp; ++t)
          param.tpShapes[first + t] = getModel(first + t).groups[g][p].shape;
      }
  }
  return Error::success();
}

Error DeepSpeedReader::buildUniversalParams() {
  if (Error error = listUniversalParams())
    return error;
  for (auto [param, stages] : llvm::zip(checkpoint.params, paramStages)) {
    if (param.expertLayer)
      param.tpShapes.resize(checkpoint.getAutoEpSize(), param.tpShapes[0]);
    Expected<ParamMap> tpMap = buildModelParallelMap(param, stages);
    if (!tpMap)
      return tpMap.takeError();
    // A vocabulary padded in F has rows no Universal file holds.
    if (tpMap->originalVocabSize)
      return makeError(files.modelFiles[0] + ": parameter '" + param.name +
                       "': a vocabulary padded for its split, whose "
                       "Universal form drops the padding, is not supported");
    param.tpMap = std::move(*tpMap);
    Expected<ParamMap> whole =
        buildReplicatedLayout(param.name, param.tpMap.logicalShape, 1);
    if (!whole)
      return whole.takeError();
    param.map = std::move(*whole);
    param.slices = {{0, *getNumElements(param.tpMap.logicalShape)}};
    if (Error error = readUniversalStates(param))
      return error;
  }
  return Error::success();
}

Error DeepSpeedReader::runUniversal(llvm::StringRef folder) {
  checkpoint.folder = folder.str();
  checkpoint.universal = true;
  if (Error error = findUniversalFiles(folder))
    return error;
  checkpoint.tp = files.tp;
  checkpoint.pp = files.pp;
  checkpoint.dp = 1;
  if (Error error = readFiles())
    return error;
  for (auto [path, model] : llvm::zip(files.modelFiles, models))
    if (model.mpWorldSize != files.mp || model.version != models[0].version ||
        model.globalSteps != models[0].globalSteps)
      return makeError(path +
                       ": its mp_world_size, ds_version or global_steps "
                       "differ from " +
                       files.modelFiles[0] + "'s");
  checkpoint.recordedDp = models[0].dpWorldSize;
  checkpoint.dsVersion = models[0].version;
  checkpoint.globalSteps = models[0].globalSteps;
  // The stage the source ran: what the copied model states' config says.
  PickleCursor root(checkpoint.modelFiles[0]->getDocument());
  Expected<PickleCursor> stage = root.at("ds_config");
  if (stage)
    stage = stage->at("zero_optimization");
  if (stage)
    stage = stage->at("stage");
  Expected<int64_t> value = stage ? stage->getInt() : stage.takeError();
  if (value && *value == 0)
    return makeError(files.modelFiles[0] +
                     ": ZeRO stage 0 (BF16_Optimizer), whose Universal form "
                     "is not read: no such folder has been checked against "
                     "what DeepSpeed loads from it; retarget the checkpoint "
                     "itself (ds-retarget)");
  if (!value || *value < 1 || *value > 3 || (*value == 3) != files.zero3)
    return makeError(files.modelFiles[0] + ": ds_config.zero_optimization." +
                     "stage " +
                     (value ? std::to_string(*value) + " is not the stage of"
                            : llvm::toString(value.takeError()) + ", for") +
                     " its file names");
  checkpoint.stage = *value;
  // The module's dtype (DeepSpeed names the optimizer files of bf16 runs
  // bf16_*).
  for (auto [key, type] :
       {std::pair{"bf16", DType::BF16}, {"fp16", DType::F16}}) {
    std::optional<PickleCursor> enabled = root.find("ds_config");
    enabled = enabled ? enabled->find(key) : std::nullopt;
    enabled = enabled ? enabled->find("enabled") : std::nullopt;
    if (enabled && enabled->is(PickleValue::Bool) && enabled->get().boolean)
      checkpoint.moduleType = type;
  }
  if (checkpoint.moduleType == DType::BF16)
    checkpoint.optimizerPrefix = "bf16_";
  if (Error error = readExpertParallelLayout())
    return error;
  if (Error error = readTensorParallelLayout())
    return error;
  if (Error error = buildUniversalParams())
    return error;
  if (Error error = buildUniversalTemplates())
    return error;
  return buildTensors();
}

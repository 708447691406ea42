//===- DeepSpeedCheckpoint.cpp - A DeepSpeed ZeRO checkpoint, read --------===//
//
// Opening runs the steps of DeepSpeedReader.h in order: list the folder,
// read every file's states, check that they are of one run, place every
// fragment, and build each parameter's map (ParamGrid.cpp).
//
// A pipeline run's files are those of a grid of DP x MP ranks like any
// other, the model-parallel rank counting the TP ranks of every stage; its
// stages differ only in which parameters their files list.
//
//===----------------------------------------------------------------------===//

#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Checkpoint/ValueCheck.h"
#include "DeepSpeedReader.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "ucp/Engine/Executor.h"
#include "ucp/Formats/Json/LegacyDocument.h"
#include "ucp/Layout/LegacyMetadata.h"
#include "ucp/Layout/NestedLayout.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include <map>

using namespace ucp;
using llvm::Error;
using llvm::Expected;

Error DeepSpeedReader::readFiles() {
  for (const std::string &path : files.modelFiles) {
    Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(path);
    if (!file)
      return file.takeError();
    Expected<ModelStates> states = readModelStates(**file);
    if (!states)
      return states.takeError();
    models.push_back(std::move(*states));
    checkpoint.modelFiles.push_back(std::move(*file));
  }
  for (const std::string &path : files.optimizerFiles) {
    Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(path);
    if (!file)
      return file.takeError();
    Expected<TensorStates> states = readTensorStates(**file, files.zero3);
    if (!states)
      return states.takeError();
    DeepSpeedCheckpoint::RankFile &rank = checkpoint.ranks.emplace_back();
    for (const RankGroup &group : states->groups) {
      rank.partitions.push_back(group.partitions);
      rank.steps.push_back(group.step);
    }
    rank.file = std::move(*file);
    optimizers.push_back(std::move(*states));
  }
  return Error::success();
}

/// checkpoint_parallel_dimensions as "{pp_degree 2, tp_degree 1}".
static std::string
describeDegrees(const std::optional<std::pair<int64_t, int64_t>> &degrees) {
  if (!degrees)
    return "none";
  return "{pp_degree " + std::to_string(degrees->first) + ", tp_degree " +
         std::to_string(degrees->second) + "}";
}

/// Refuses files that disagree with the first of their kind: `what` names
/// the value, `value` reads it from file `i`.
template <typename Value>
static Error checkAgree(llvm::ArrayRef<std::string> paths, llvm::StringRef what,
                        Value value) {
  for (size_t i = 1; i < paths.size(); ++i)
    if (value(i) != value(0))
      return makeError(paths[i] + ": its " + what + " differs from " +
                       paths[0] + "'s: the folder mixes the files of two runs");
  return Error::success();
}

std::vector<size_t> DeepSpeedReader::getFirstFileOfGroups() const {
  std::vector<size_t> first;
  for (size_t r = 0; r < optimizers.size(); ++r)
    while (first.size() < optimizers[r].groups.size())
      first.push_back(r);
  return first;
}

Error DeepSpeedReader::checkSteps() const {
  const std::vector<std::string> &paths = files.optimizerFiles;
  std::vector<size_t> firstFile = getFirstFileOfGroups();
  for (size_t g = 0; g < firstFile.size(); ++g) {
    std::optional<double> first;
    for (size_t r = firstFile[g]; r < optimizers.size(); ++r) {
      if (g >= optimizers[r].groups.size())
        continue; // A stage of fewer groups.
      std::optional<PickleRef> step = optimizers[r].groups[g].step;
      std::optional<double> value;
      if (step) {
        Expected<double> read =
            readStepValue(*checkpoint.ranks[r].file, *step);
        if (!read)
          return read.takeError();
        value = *read;
      }
      if (r == firstFile[g]) {
        first = value;
        continue;
      }
      auto describe = [](std::optional<double> step) {
        return step ? "step " + llvm::formatv("{0}", llvm::format("%g", *step))
                                    .str()
                    : std::string("no step");
      };
      if (value != first)
        return makeError(paths[r] + ": parameter group " + std::to_string(g) +
                         " has " + describe(value) + ", where " +
                         paths[firstFile[g]] +
                         " has " + describe(first) +
                         ": DeepSpeed steps every rank together, so the "
                         "folder mixes files of two runs or steps");
    }
  }
  return Error::success();
}

Error DeepSpeedReader::checkParamGroups(size_t r) const {
  // Every rank's optimizer has the run's settings; a retarget writes the
  // first file's.
  const auto &mine = optimizers[r].paramGroups;
  const auto &first = optimizers[0].paramGroups;
  auto differ = [&](const std::string &ours, const std::string &theirs) {
    return makeError(files.optimizerFiles[r] + ": its optimizer's " + ours +
                     ", where " + files.optimizerFiles[0] + "'s " + theirs +
                     ": the folder mixes the files of two runs or "
                     "configurations");
  };
  if (mine.size() != first.size())
    return differ("param_groups are " + std::to_string(mine.size()),
                  std::to_string(first.size()));
  auto describe = [](const auto &settings, size_t g, size_t i) {
    return i < settings[g].size()
               ? settings[g][i].first + " is " + settings[g][i].second
               : std::string("ends");
  };
  for (size_t g = 0; g < mine.size(); ++g)
    for (size_t i = 0; i < std::max(mine[g].size(), first[g].size()); ++i)
      if (i >= mine[g].size() || i >= first[g].size() ||
          mine[g][i] != first[g][i])
        return differ("param_groups[" + std::to_string(g) + "] " +
                          describe(mine, g, i),
                      describe(first, g, i));
  return Error::success();
}

Error DeepSpeedReader::checkOneRun() const {
  const std::vector<std::string> &modelPaths = files.modelFiles;
  for (auto [path, model] : llvm::zip(modelPaths, models))
    if (model.mpWorldSize != files.mp || model.dpWorldSize != files.dp ||
        model.ppTpDegrees != models[0].ppTpDegrees)
      return makeError(path + ": it records mp_world_size " +
                       std::to_string(model.mpWorldSize) +
                       ", dp_world_size " + std::to_string(model.dpWorldSize) +
                       " and checkpoint_parallel_dimensions " +
                       describeDegrees(model.ppTpDegrees) + ", but " +
                       modelPaths[0] + " a grid of " +
                       describeGrid(files.dp, files.pp, files.tp) + " (" +
                       describeDegrees(models[0].ppTpDegrees) + ")");
  auto model = [&](auto field) {
    return [&, field](size_t i) { return field(models[i]); };
  };
  if (Error error = checkAgree(modelPaths, "ds_version",
                               model([](auto &m) { return m.version; })))
    return error;
  if (Error error = checkAgree(modelPaths, "global_steps",
                               model([](auto &m) { return m.globalSteps; })))
    return error;
  const std::vector<std::string> &optimizerPaths = files.optimizerFiles;
  if (Error error = checkAgree(optimizerPaths, "ZeRO stage",
                               [&](size_t i) { return optimizers[i].stage; }))
    return error;
  for (size_t r = 0; r < optimizers.size(); ++r) {
    const std::string &path = optimizerPaths[r];
    const TensorStates &optimizer = optimizers[r];
    // ZeRO-1/2 model states are per model-parallel rank, ZeRO-3's per rank.
    const ModelStates &model = getModel(r % files.mp);
    if (optimizer.version != models[0].version)
      return makeError(path + ": its ds_version differs from " + modelPaths[0] +
                       "'s: the folder mixes the files of two runs");
    if (Error error = checkParamGroups(r))
      return error;
    if (optimizer.groups.size() != model.groups.size())
      return makeError(path + ": it holds " +
                       std::to_string(optimizer.groups.size()) +
                       " parameter groups, the model states " +
                       std::to_string(model.groups.size()));
    // Group g of every stage steps together: the first file holding it
    // says whether it has its moments.
    for (size_t g = 0; g < optimizer.groups.size(); ++g) {
      if (g == checkpoint.groupMoments.size())
        checkpoint.groupMoments.push_back(optimizer.groups[g].moments);
      if (optimizer.groups[g].moments != checkpoint.groupMoments[g])
        return makeError(path + ": it holds " +
                         (optimizer.groups[g].moments ? "" : "no ") +
                         "Adam moments of parameter group " +
                         std::to_string(g) + ", " +
                         optimizerPaths[getFirstFileOfGroups()[g]] + " " +
                         (optimizer.groups[g].moments ? "none" : "some") +
                         ": the folder mixes the files of two runs");
    }
  }
  for (size_t r = 0; r < optimizers.size(); ++r)
    if (Error error = checkPartitionCounts(r))
      return error;
  if (Error error = checkSteps())
    return error;
  // Every TP rank of a stage lists the same parameters in the same groups
  // (their shapes may differ: they are TP shards); stages list their own.
  for (size_t i = 1; i < models.size(); ++i) {
    size_t stageFirst = i % files.mp / files.tp * files.tp;
    if (i == stageFirst)
      continue;
    const ModelStates &first = getModel(stageFirst), &other = models[i];
    bool same = first.groups.size() == other.groups.size();
    for (size_t g = 0; same && g < first.groups.size(); ++g) {
      same = first.groups[g].size() == other.groups[g].size();
      for (size_t p = 0; same && p < first.groups[g].size(); ++p)
        same = first.groups[g][p].name == other.groups[g][p].name;
    }
    if (!same)
      return makeError(modelPaths[i] +
                       ": its param_shapes list other "
                       "parameters or groups than " +
                       modelPaths[stageFirst] + "'s");
    // ZeRO-3 DP ranks of one TP rank record identical shapes.
    if (files.zero3 && i >= static_cast<size_t>(files.mp))
      for (size_t g = 0; g < other.groups.size(); ++g)
        for (size_t p = 0; p < other.groups[g].size(); ++p)
          if (other.groups[g][p].shape !=
              models[i % files.mp].groups[g][p].shape)
            return makeError(
                modelPaths[i] + ": parameter '" + other.groups[g][p].name +
                "' has shape " + formatList(other.groups[g][p].shape) +
                ", but " + modelPaths[i % files.mp] + " says " +
                formatList(models[i % files.mp].groups[g][p].shape));
  }
  return Error::success();
}

Error DeepSpeedReader::checkPartitionCounts(size_t rank) const {
  const TensorStates &optimizer = optimizers[rank];
  const std::string &path = files.optimizerFiles[rank];
  if (optimizer.partitionCount != files.dp)
    return makeError(path + ": its partition_count is " +
                     std::to_string(optimizer.partitionCount) + ", not the " +
                     std::to_string(files.dp) + " DP ranks of the folder");
  for (size_t g = 0; g < optimizer.groups.size(); ++g) {
    int64_t dp = getGroupDpDegree(g), outer = getGroupOuterDegree(g);
    if (optimizer.groupPartitionCounts[g] != dp)
      return makeError(
          path + ": parameter group " + std::to_string(g) +
          " is partitioned over " +
          std::to_string(optimizer.groupPartitionCounts[g]) +
          " ranks, not the " + std::to_string(dp) +
          (expertGroups.count(g) ? " expert-data-parallel" : " DP") +
          " ranks of its parameters");
    if (optimizer.groupPartitionRanks.empty())
      continue;
    // ZeRO-3 AutoEP records each group's partition group: the ranks with
    // this rank's model-parallel (TP or EP) rank.
    Extents members;
    for (int64_t d = 0; d < dp; ++d)
      members.push_back(d * outer + static_cast<int64_t>(rank) % outer);
    if (optimizer.groupPartitionRanks[g] != members ||
        optimizer.groupPartitionRank[g] != static_cast<int64_t>(rank) / outer)
      return makeError(
          path + ": ds_zero_partition_groups gives sub-group " +
          std::to_string(g) + " the ranks " +
          formatList(optimizer.groupPartitionRanks[g]) + " and place " +
          std::to_string(optimizer.groupPartitionRank[g]) + ", but grid rank " +
          std::to_string(rank) + " is at " + std::to_string(rank / outer) +
          " of " + formatList(members));
  }
  return Error::success();
}

Error DeepSpeedReader::readTensorParallelLayout() {
  const std::optional<llvm::json::Value> &info = getModel(0).universalInfo;
  for (int64_t t = 1; t < files.mp; ++t)
    if (getModel(t).universalInfo != info)
      return makeError(files.modelFiles[t] +
                       ": its universal_checkpoint_info differs from " +
                       files.modelFiles[0] + "'s");
  if (!info) {
    if (files.tp > 1)
      return makeError(files.modelFiles[0] +
                       ": a tensor-parallel checkpoint without "
                       "universal_checkpoint_info, so nothing says how its "
                       "parameters are split");
    return Error::success();
  }
  auto inInfo = [&](Error error) {
    return makeError(files.modelFiles[0] + ": universal_checkpoint_info: " +
                     llvm::toString(std::move(error)));
  };
  llvm::json::Object rest = *info->getAsObject();
  // The AutoEP layout is read from the model states (AutoEpLayout.cpp),
  // where these keys were checked.
  if (!checkpoint.autoEpLayers.empty())
    for (llvm::StringRef key :
         {"expert_parameter_patterns", "ds_autoep_layers", "autoep_layers"})
      rest.erase(key);
  // A map the checkpoint carries (affine_map) wins over the categories
  // (spec §6.3): parseLegacyCategories reads it.
  Expected<LegacyCategories> parsed =
      parseLegacyCategories(llvm::json::Value(std::move(rest)));
  if (!parsed)
    return inInfo(parsed.takeError());
  categories = std::move(*parsed);
  return Error::success();
}

Expected<ParamMap>
DeepSpeedReader::buildTpMap(llvm::StringRef name,
                            llvm::ArrayRef<Extents> shapes) const {
  if (files.tp == 1)
    return buildReplicatedLayout(name, shapes[0], 1);
  return lowerObservedParam(name, shapes, *categories);
}

Expected<ParamMap>
DeepSpeedReader::buildExpertMap(llvm::StringRef name, size_t layer,
                                const Extents &localShape) const {
  return buildAutoEpExpertMap(name, checkpoint.autoEpLayers[layer], localShape);
}

Error DeepSpeedReader::run(llvm::StringRef folder) {
  Expected<FolderScan> scan = scanCheckpointFolder(folder);
  if (!scan)
    return scan.takeError();
  // The first model-state file records the grid the run saved.
  Expected<std::unique_ptr<TorchFile>> first =
      TorchFile::open(getFirstModelFile(*scan));
  if (!first)
    return first.takeError();
  Expected<ModelStates> grid = readModelStates(**first);
  if (!grid)
    return grid.takeError();
  for (auto [what, size] : {std::pair{"mp_world_size", grid->mpWorldSize},
                            {"dp_world_size", grid->dpWorldSize}})
    if (std::string error = checkWorldSize(size, what); !error.empty())
      return makeError((*first)->getPath() + ": " + error);
  Expected<std::pair<int64_t, int64_t>> stages =
      getPipelineGrid(*scan, **first, *grid);
  if (!stages)
    return stages.takeError();
  Expected<CheckpointFiles> listed = selectGridFiles(
      *scan, stages->first, stages->second, grid->dpWorldSize);
  if (!listed)
    return listed.takeError();
  files = std::move(*listed);
  checkpoint.folder = folder.str();
  checkpoint.optimizerPrefix = scan->prefix;
  checkpoint.pp = files.pp;
  checkpoint.pipeline = !files.layerFiles.empty();
  checkpoint.tp = files.tp;
  checkpoint.dp = files.dp;
  if (Error error = readFiles())
    return error;
  if (Error error = openLayerFiles())
    return error;
  if (Error error = deriveParamShapes())
    return error;
  if (Error error = readExpertParallelLayout())
    return error;
  if (Error error = checkOneRun())
    return error;
  checkpoint.recordedDp = models[0].dpWorldSize;
  checkpoint.dsVersion = models[0].version;
  checkpoint.globalSteps = models[0].globalSteps;
  if (Error error = checkOptimizerCopies())
    return error;
  if (Error error = checkParamShapes())
    return error;
  checkpoint.stage = optimizers[0].stage;
  checkpoint.bf16Optimizer = !optimizers[0].recordsStage;
  if (Error error = readTensorParallelLayout())
    return error;
  if (Error error = buildParams())
    return error;
  if (Error error = findLayerWeights())
    return error;
  if (Error error = checkTiedCopies())
    return error;
  if (Error error = checkWeightsAgainstMasters())
    return error;
  return buildTensors();
}

Expected<std::unique_ptr<DeepSpeedCheckpoint>>
DeepSpeedCheckpoint::open(llvm::StringRef folder, CheckShare share) {
  auto checkpoint =
      std::unique_ptr<DeepSpeedCheckpoint>(new DeepSpeedCheckpoint());
  if (share.keepReads)
    checkpoint->openReads = std::make_unique<OpenReads>();
  DeepSpeedReader reader(*checkpoint, share);
  if (Error error = reader.run(folder))
    return std::move(error);
  return checkpoint;
}

Expected<std::unique_ptr<DeepSpeedCheckpoint>>
DeepSpeedCheckpoint::openUniversal(llvm::StringRef folder) {
  auto checkpoint =
      std::unique_ptr<DeepSpeedCheckpoint>(new DeepSpeedCheckpoint());
  DeepSpeedReader reader(*checkpoint);
  if (Error error = reader.runUniversal(folder))
    return std::move(error);
  return checkpoint;
}

const llvm::MemoryBuffer *
DeepSpeedCheckpoint::getFragmentBuffer(const DeepSpeedParam &param,
                                       int64_t rank, TensorState state) const {
  if (isFresh())
    return freshSource->getShardBuffer(freshIndex[getIndex(param)],
                                       TensorState::Weight, 0);
  const TorchFile &file =
      isUniversal()
          ? *universalFiles[getIndex(param)][static_cast<size_t>(state)]
          : *ranks[rank].file;
  return getBufferHolding(file.getBuffer(),
                          getFragment(param, rank, state).data);
}

void DeepSpeedCheckpoint::releaseFragmentPages(const DeepSpeedParam &param,
                                               int64_t rank, TensorState state,
                                               const char *data,
                                               size_t bytes) const {
  if (const llvm::MemoryBuffer *buffer = getFragmentBuffer(param, rank, state))
    releaseMappedPages(*buffer, data, bytes);
}

ProgramRun
DeepSpeedCheckpoint::getFragmentRun(const DeepSpeedParam &param,
                                    TensorState state,
                                    const CopyProgram &program) const {
  ProgramRun run{&program,
                 {},
                 getFragment(param, 0, state).dtype,
                 getScalePower(state),
                 param.name};
  for (int64_t rank = 0; rank < int64_t(param.slices.size()); ++rank)
    run.buffers.sources[rank] = getFragment(param, rank, state).data;
  return run;
}

llvm::Error DeepSpeedCheckpoint::checkFragments(const DeepSpeedParam &param,
                                                TensorState state,
                                                bool checkValues) const {
  std::map<int64_t, const char *> fragments;
  for (int64_t rank = 0; rank < int64_t(param.slices.size()); ++rank)
    fragments[rank] = getFragment(param, rank, state).data;
  DType type = getFragment(param, 0, state).dtype;
  // Values first: a NaN in one replica is named as a NaN, not as replicas
  // that differ.
  if (checkValues)
    if (llvm::Error error = checkStateValues(
            param.map, state, type, fragments, [&](int64_t rank) {
              return getShardFile(getIndex(param), state, rank);
            }))
      return error;
  if (llvm::Error error =
          checkReplicas(param.map, fragments, getElementSize(type)))
    return makeError(getStateName(state), llvm::toString(std::move(error)));
  // The pages read leave this process (they stay in the page cache for the
  // copy): a retarget's memory stays one partition's, not every fragment's
  // it has checked.
  for (const auto &[rank, data] : fragments)
    if (data)
      releaseFragmentPages(
          param, rank, state, data,
          getNumElements(getFragment(param, rank, state).shape).value_or(0) *
              getElementSize(type));
  return llvm::Error::success();
}

std::string DeepSpeedCheckpoint::getMissingStates(size_t group) const {
  std::string missing;
  for (TensorState state : kOptimizerStates)
    if (!hasState(group, state))
      missing += (missing.empty() ? "" : ", ") + getStateName(state).str();
  return missing;
}

TensorData DeepSpeedCheckpoint::getFragment(const DeepSpeedParam &param,
                                            int64_t rank,
                                            TensorState state) const {
  assert(hasState(param.group, state) && "a state the group lacks");
  if (isUniversal())
    return universalStates[getIndex(param)][static_cast<size_t>(state)];
  const RankFile &file = ranks[rank];
  const FragmentSlice &slice = param.slices[rank];
  // A rank of a pipeline stage of fewer groups, which holds none of it.
  if (param.group >= file.partitions.size())
    return {DType::F32, {0}, {1}, nullptr};
  TensorData partition = file.file->getTensor(
      file.partitions[param.group][static_cast<size_t>(state)]);
  return {DType::F32,
          {slice.count},
          {1},
          partition.data + slice.offset * getElementSize(DType::F32)};
}

//===- UniversalConversion.cpp - DeepSpeed checkpoints to Universal -------===//
//
// Three steps: plan (every parameter's merge keys, layout and copy programs,
// all checked before any file is created), write (the state files in
// parallel, then step, optimizer-state, model-state and map files, all in
// a temporary folder), commit (rename the folder, write latest_universal).
//
//===----------------------------------------------------------------------===//

#include "ucp/DeepSpeed/UniversalConversion.h"
#include "JobReads.h"
#include "ucp/DeepSpeed/UniversalDocuments.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Engine/ProgramDriver.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Formats/Torch/TorchFileWriter.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/Planner.h"
#include "ucp/Support/CheckpointFolder.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/OutputFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace {

/// One parameter, planned.
struct ParamPlan {
  const DeepSpeedParam *param = nullptr;
  UniversalStateLayout layout;
  /// Every state's: a program serves them all.
  const CopyProgram *program = nullptr;
  int64_t bytes = 0;
};

class UniversalConverter {
public:
  UniversalConverter(const DeepSpeedCheckpoint &checkpoint,
                     const UniversalOptions &options)
      : checkpoint(checkpoint), options(options) {}

  Error plan();
  /// Divides the files among the processes of the options' group, and
  /// returns what they must agree on.
  GroupFingerprint divideOutputs();
  /// The bytes of the input that this process's files read.
  Expected<std::vector<FileBytes>> getReads() const;
  Error write(llvm::StringRef folder);
  const std::vector<ParamPlan> &getPlans() const { return plans; }
  int64_t getBytesWritten() const { return bytesWritten; }
  size_t getFilesWritten() const { return filesWritten; }

private:
  Expected<UniversalStateLayout> planLayout(const DeepSpeedParam &param,
                                            const ParamMap &full) const;
  Error checkPatternsUsed(llvm::ArrayRef<UniversalMerge> merges) const;
  Error writeState(const ParamPlan &plan, size_t state, llvm::StringRef folder);
  Error writeStates(llvm::StringRef folder);
  Error writeStep(const ParamPlan &plan, llvm::StringRef folder);
  Error writeCopied(const PickleDocument &document, const TorchFile &source,
                    llvm::StringRef path);
  Error copyModelFiles(llvm::StringRef folder);
  /// Counts an output written (for the group's tests, see ProcessGroup).
  void markWritten() {
    if (options.group)
      options.group->markOutputWritten();
  }
  /// Reports progress, at most once a second unless `force`, from the
  /// thread that runs the job; an error when the progress function stops
  /// the run.
  Error report(bool force);

  const DeepSpeedCheckpoint &checkpoint;
  const UniversalOptions &options;
  std::vector<ParamPlan> plans;
  TransferPrograms programs;
  std::atomic<int64_t> bytesWritten{0};
  std::atomic<size_t> filesWritten{0};
  size_t filesTotal = 0;
  /// The files in the order they are written: each state of each
  /// parameter, each parameter's step, the optimizer state, the model
  /// states, the map document.
  OutputShare share;
  std::vector<size_t> stateOutputs, stepOutputs, modelOutputs;
  size_t optimizerOutput = 0, mapOutput = 0;
  std::chrono::steady_clock::time_point lastProgress;
};

} // namespace

Expected<UniversalStateLayout>
UniversalConverter::planLayout(const DeepSpeedParam &param,
                               const ParamMap &full) const {
  UniversalStateLayout layout;
  const std::optional<LegacyCategories> &categories =
      checkpoint.getCategories();
  if (categories) {
    Expected<UniversalMerge> merge =
        classifyUniversalMerge(param.name, *categories);
    if (!merge)
      return merge.takeError();
    layout.merge = std::move(*merge);
  } else {
    layout.merge.catDim = 0; // What an injected, empty info gives.
  }
  layout.shape = full.logicalShape;
  // An expert is written whole with its expert count, at every stage.
  if (param.expertLayer) {
    layout.experts =
        checkpoint.getAutoEpLayers()[*param.expertLayer].numExperts;
    return layout;
  }
  // ZeRO-3 without TP writes the merged flat fragments as they are.
  layout.bare = checkpoint.getZeroStage() == 3 && checkpoint.getTpDegree() == 1;
  if (layout.bare)
    layout.shape = {*getNumElements(full.logicalShape)};
  // The converter cuts a vocabulary to original_vocab_size; the map's F
  // must then have exactly those rows.
  if (layout.merge.vocabulary && categories && categories->originalVocabSize &&
      (full.logicalShape.empty() ||
       full.logicalShape[0] != *categories->originalVocabSize))
    return makeError("parameter '" + param.name + "': a vocabulary of " +
                     formatList(full.logicalShape) +
                     " that DeepSpeed would cut to original_vocab_size " +
                     std::to_string(*categories->originalVocabSize) +
                     " rows, which its layout does not pad to");
  if (layout.merge.subParams) {
    const TorchFile &model = *checkpoint.getModelFiles().front();
    Expected<PickleCursor> entry =
        PickleCursor(model.getDocument()).at("universal_checkpoint_info");
    if (entry)
      entry = entry->at("parameter_with_sub_params");
    if (entry)
      entry = entry->at(*layout.merge.subParams);
    if (!entry)
      return makeError(model.getPath() + ": " +
                       llvm::toString(entry.takeError()));
    layout.subParamEntry = *entry;
  }
  return layout;
}

Error UniversalConverter::checkPatternsUsed(
    llvm::ArrayRef<UniversalMerge> merges) const {
  if (!options.strict || !checkpoint.getCategories())
    return Error::success();
  std::set<std::string> used;
  for (const UniversalMerge &merge : merges)
    used.insert(merge.usedPatterns.begin(), merge.usedPatterns.end());
  std::vector<std::string> unused;
  for (const std::string &pattern :
       getMergePatterns(*checkpoint.getCategories()))
    if (!used.count(pattern))
      unused.push_back("'" + pattern + "'");
  if (unused.empty())
    return Error::success();
  return makeError(checkpoint.getModelFiles().front()->getPath() +
                   ": universal_checkpoint_info names patterns no parameter "
                   "matches (" +
                   llvm::join(unused, ", ") +
                   "), so it may describe another model; --no_strict "
                   "converts it anyway");
}

Error UniversalConverter::plan() {
  if (checkpoint.getZeroStage() < 3 && !checkpoint.getCategories() &&
      !options.injectMissingState)
    return makeError(checkpoint.getModelFiles().front()->getPath() +
                     ": no universal_checkpoint_info, so nothing says how the "
                     "parameters were split (DeepSpeed's converter refuses "
                     "it too); --inject_missing_state converts it as a "
                     "checkpoint without tensor parallelism");
  std::vector<ParamMap> sources, targets;
  std::vector<UniversalMerge> merges;
  for (const DeepSpeedParam &param : checkpoint.getParams()) {
    if (Error error = checkUniversalFolderName(param.name))
      return error;
    ParamPlan plan;
    plan.param = &param;
    sources.push_back(param.map);
    targets.push_back(getFullTensorMap(param.map));
    Expected<UniversalStateLayout> layout = planLayout(param, targets.back());
    if (!layout)
      return layout.takeError();
    plan.layout = std::move(*layout);
    plan.bytes = *getNumElements(plan.layout.shape) * 4;
    merges.push_back(plan.layout.merge);
    plans.push_back(std::move(plan));
  }
  if (Error error = checkPatternsUsed(merges))
    return error;
  // The lowest holder of a replicated block is TP rank 0, whose copy the
  // converter keeps (after checking that the others equal it).
  Expected<TransferPrograms> planned =
      planTransfers(sources, targets, {ReplicaPolicy::Lowest});
  if (!planned)
    return planned.takeError();
  programs = std::move(*planned);
  for (ParamPlan &plan : plans) {
    plan.program = &programs.at(plan.param->name);
    // One program serves every state: each must be able to move through it.
    for (TensorState state : kOptimizerStates)
      if (Error error = checkScalePower(*plan.program, plan.param->name,
                                        getScalePower(state)))
        return error;
  }
  return Error::success();
}

Error UniversalConverter::report(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now - lastProgress < std::chrono::seconds(1))
    return Error::success();
  lastProgress = now;
  return reportProgress(options.progress, filesWritten, filesTotal,
                        bytesWritten);
}

Error UniversalConverter::writeCopied(const PickleDocument &document,
                                      const TorchFile &source,
                                      llvm::StringRef path) {
  Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(path, document);
  if (!writer)
    return writer.takeError();
  if (Error error = (*writer)->copyStoragesFrom(source))
    return error;
  if (Error error = (*writer)->commit(/*durable=*/false))
    return error;
  ++filesWritten;
  markWritten();
  return Error::success();
}

/// The document of `param`'s step.pt and the optimizer file it copies
/// from; none for an optimizer without steps. The ranks agree on the step
/// (the reader checked): the first rank holding a fragment gives it.
static std::optional<std::pair<PickleDocument, const TorchFile *>>
getStepDocument(const DeepSpeedCheckpoint &checkpoint,
                const DeepSpeedParam &param) {
  for (int64_t rank = 0; rank < int64_t(param.slices.size()); ++rank) {
    if (param.slices[rank].count == 0)
      continue;
    std::optional<PickleRef> step = checkpoint.getStep(rank, param.group);
    if (!step)
      return std::nullopt;
    const TorchFile &source = checkpoint.getOptimizerFile(rank);
    return std::make_pair(buildCopyDocument(source.getDocument(), *step),
                          &source);
  }
  return std::nullopt;
}

Error UniversalConverter::writeStep(const ParamPlan &plan,
                                    llvm::StringRef folder) {
  auto step = getStepDocument(checkpoint, *plan.param);
  if (!step)
    return Error::success();
  llvm::SmallString<256> file(folder);
  path::append(file, "zero", plan.param->name, "step.pt");
  return writeCopied(step->first, *step->second, file);
}

Expected<std::vector<FileBytes>> UniversalConverter::getReads() const {
  std::vector<FileBytes> reads;
  for (auto [p, plan] : llvm::enumerate(plans)) {
    size_t index = plan.param - checkpoint.getParams().data();
    for (auto [s, state] : llvm::enumerate(kOptimizerStates))
      if (share.isMine(stateOutputs[p * kOptimizerStates.size() + s]))
        checkpoint.addStateBytes(index, state, reads);
    if (share.isMine(stepOutputs[p]))
      if (auto step = getStepDocument(checkpoint, *plan.param))
        addCopiedReads(*step->second, step->first, reads);
  }
  if (share.isMine(optimizerOutput)) {
    Expected<PickleDocument> optimizer = buildTensorStateDocument(checkpoint);
    if (!optimizer)
      return optimizer.takeError();
    addCopiedReads(checkpoint.getOptimizerFile(0), *optimizer, reads);
  }
  for (auto [m, model] : llvm::enumerate(checkpoint.getModelFiles())) {
    if (!share.isMine(modelOutputs[m]))
      continue;
    // Copied whole, or (AutoEP) its document's storages.
    addFileRead(model->getBuffer(), reads);
  }
  return reads;
}

/// Writes the merged tensor of `run` (target buffer 0, `bytes` long) as
/// storage 0 of `writer`: straight from the mapped inputs where it only
/// concatenates runs of them, else executed into a buffer of the thread's,
/// kept for its next tensor.
static Error writeTensor(ProgramRun run, int64_t bytes,
                         TorchFileWriter &writer) {
  if (std::optional<std::vector<SourcePiece>> pieces =
          getSourcePieces(run, 0)) {
    std::vector<llvm::StringRef> bytes;
    for (const SourcePiece &piece : *pieces)
      bytes.push_back(piece.bytes);
    return writer.writeStorage(kStateStorageKey, bytes);
  }
  static thread_local std::vector<char> scratch;
  scratch.resize(bytes);
  run.buffers.targets[0] = scratch.data();
  CpuExecutor cpu(/*threads=*/1);
  if (Error error = runIntoTarget(run, 0, bytes / 4, cpu))
    return error;
  return writer.writeStorage(kStateStorageKey,
                             {llvm::StringRef(scratch.data(), bytes)});
}

Error UniversalConverter::writeState(const ParamPlan &plan, size_t s,
                                     llvm::StringRef folder) {
  const DeepSpeedParam &param = *plan.param;
  TensorState state = kOptimizerStates[s];
  int64_t ranks = param.slices.size();
  // torch.cat requires grad if its inputs do: the fp32 partitions do.
  bool requiresGrad = false;
  for (int64_t rank = 0; rank < ranks; ++rank)
    if (param.slices[rank].count > 0) {
      const TorchFile &file = checkpoint.getOptimizerFile(rank);
      requiresGrad = file.getDocument()
                         .get(checkpoint.getPartition(rank, param.group, state))
                         .requiresGrad;
      break;
    }
  Expected<PickleDocument> document =
      buildStateDocument(plan.layout, requiresGrad);
  if (!document)
    return makeError("parameter '" + param.name +
                     "': " + llvm::toString(document.takeError()));
  llvm::SmallString<256> file(folder);
  path::append(file, "zero", param.name, getStateName(state) + ".pt");
  Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(file, *document);
  if (!writer)
    return writer.takeError();
  // The converter asserts that replicated TP shards are equal; so do we,
  // and scan the values.
  if (Error error =
          checkpoint.checkFragments(param, state, options.checkValues))
    return error;
  ProgramRun run = checkpoint.getFragmentRun(param, state, *plan.program);
  std::map<int64_t, const char *> shards;
  for (const auto &[rank, data] : run.buffers.sources)
    shards[rank] = static_cast<const char *>(data);
  if (Error error = writeTensor(std::move(run), plan.bytes, **writer))
    return error;
  for (int64_t rank = 0; rank < ranks; ++rank)
    checkpoint.getOptimizerFile(rank).releasePages(
        shards[rank], param.slices[rank].count * 4);
  // On disk with the whole folder (OutputFolder::commit).
  if (Error error = (*writer)->commit(/*durable=*/false))
    return error;
  bytesWritten += plan.bytes;
  ++filesWritten;
  markWritten();
  return Error::success();
}

Error UniversalConverter::writeStates(llvm::StringRef folder) {
  // Largest first, so that the last files to finish are small ones.
  std::vector<std::pair<size_t, size_t>> jobs;
  for (size_t p = 0; p < plans.size(); ++p)
    for (size_t s = 0; s < kOptimizerStates.size(); ++s)
      if (share.isMine(stateOutputs[p * kOptimizerStates.size() + s]))
        jobs.push_back({p, s});
  llvm::stable_sort(jobs, [&](auto a, auto b) {
    return plans[a.first].bytes > plans[b.first].bytes;
  });
  llvm::DefaultThreadPool pool(llvm::hardware_concurrency(options.threads));
  std::mutex mutex;
  std::condition_variable finishedOne;
  size_t finished = 0;
  std::string failure;
  std::atomic<bool> failed{false};
  auto fail = [&](Error error) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!failed.exchange(true))
      failure = llvm::toString(std::move(error));
    else
      llvm::consumeError(std::move(error));
  };
  for (auto [p, s] : jobs)
    pool.async([&, p = p, s = s] {
      if (!failed)
        if (Error error = writeState(plans[p], s, folder))
          fail(std::move(error));
      std::lock_guard<std::mutex> lock(mutex);
      ++finished;
      finishedOne.notify_one();
    });
  // This thread reports while the pool writes: a group's progress leaves
  // from the thread that runs its collectives.
  std::unique_lock<std::mutex> lock(mutex);
  while (!finishedOne.wait_for(lock, std::chrono::seconds(1),
                               [&] { return finished == jobs.size(); })) {
    lock.unlock();
    if (Error error = report(false))
      fail(std::move(error));
    lock.lock();
  }
  lock.unlock();
  pool.wait();
  return failed ? makeError(failure) : Error::success();
}

Error UniversalConverter::copyModelFiles(llvm::StringRef folder) {
  for (auto [m, model] : llvm::enumerate(checkpoint.getModelFiles())) {
    if (!share.isMine(modelOutputs[m]))
      continue;
    llvm::SmallString<256> file(folder);
    path::append(file, path::filename(model->getPath()));
    if (checkpoint.getAutoEpSize() && checkpoint.getZeroStage() < 3) {
      Expected<PickleDocument> document =
          buildAutoEpModelStatesDocument(*model);
      if (!document)
        return document.takeError();
      if (Error error = writeCopied(*document, *model, file))
        return error;
      continue;
    }
    if (std::error_code ec = fs::copy_file(model->getPath(), file))
      return makeError(file + ": cannot copy " + model->getPath() + ": " +
                       ec.message());
    ++filesWritten;
    markWritten();
  }
  return Error::success();
}

GroupFingerprint UniversalConverter::divideOutputs() {
  bool steps = checkpoint.getZeroStage() < 3;
  for (const ParamPlan &plan : plans)
    for (TensorState state : kOptimizerStates)
      stateOutputs.push_back(
          checkpoint.hasState(plan.param->group, state)
              ? share.add((plan.param->name + "/" + getStateName(state)).str(),
                          plan.bytes)
              : SIZE_MAX);
  for (const ParamPlan &plan : plans)
    stepOutputs.push_back(steps ? share.add(plan.param->name + "/step", 0)
                                : SIZE_MAX);
  optimizerOutput = share.add("optimizer_state.pt", 0);
  for (const std::unique_ptr<TorchFile> &model : checkpoint.getModelFiles()) {
    uint64_t size = 0;
    if (fs::file_size(model->getPath(), size))
      size = 0; // Read already; a size only balances the work.
    modelOutputs.push_back(
        share.add(path::filename(model->getPath()), int64_t(size)));
  }
  mapOutput = share.add("affine_map.json", 0);
  share.divide(options.group);
  GroupFingerprint plan;
  plan.addValue("the job", "ds-to-universal");
  addInputFiles(plan, checkpoint.getFolder(), checkpoint.getFiles());
  for (const ParamPlan &planned : plans)
    plan.addMap("the map of '" + planned.param->name + "'", planned.param->map);
  share.addTo(plan);
  return plan;
}

Error UniversalConverter::write(llvm::StringRef folder) {
  llvm::SmallString<256> zero(folder);
  path::append(zero, "zero");
  for (const ParamPlan &plan : plans) {
    llvm::SmallString<256> dir(zero);
    path::append(dir, plan.param->name);
    if (std::error_code ec = fs::create_directories(dir))
      return makeError(dir + ": cannot create: " + ec.message());
  }
  if (std::error_code ec = fs::create_directories(zero))
    return makeError(zero + ": cannot create: " + ec.message());
  filesTotal = share.countMine();
  if (Error error = writeStates(folder))
    return error;
  for (auto [p, plan] : llvm::enumerate(plans))
    if (share.isMine(stepOutputs[p]))
      if (Error error = writeStep(plan, folder))
        return error;
  if (share.isMine(optimizerOutput)) {
    Expected<PickleDocument> optimizer = buildTensorStateDocument(checkpoint);
    if (!optimizer)
      return optimizer.takeError();
    llvm::SmallString<256> file(zero);
    path::append(file, "optimizer_state.pt");
    if (Error error =
            writeCopied(*optimizer, checkpoint.getOptimizerFile(0), file))
      return error;
  }
  if (Error error = copyModelFiles(folder))
    return error;
  if (share.isMine(mapOutput)) {
    // The maps the conversion used, as a map document.
    std::vector<ParamMap> maps;
    for (const ParamPlan &plan : plans)
      maps.push_back(plan.param->map);
    llvm::SmallString<256> file(folder);
    path::append(file, "affine_map.json");
    Expected<std::unique_ptr<OutputFile>> document = OutputFile::create(file);
    if (!document)
      return document.takeError();
    writeMapDocument(maps, (*document)->os());
    if (Error error = (*document)->commit(/*durable=*/false))
      return error;
    ++filesWritten;
    markWritten();
  }
  return report(true);
}

/// One line per parameter group without some state: which, and how many
/// parameters went without it.
static std::vector<std::string>
getMissingStateNotices(const DeepSpeedCheckpoint &checkpoint) {
  std::vector<std::string> notices;
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  for (size_t p = 0; p < params.size(); ++p) {
    size_t g = params[p].group, count = 0;
    if ((p > 0 && params[p - 1].group == g) ||
        checkpoint.getMissingStates(g).empty())
      continue;
    while (p + count < params.size() && params[p + count].group == g)
      ++count;
    notices.push_back(
        "parameter group " + std::to_string(g) + " (" + std::to_string(count) +
        " parameters, from '" + params[p].name + "') has no " +
        checkpoint.getMissingStates(g) +
        " (saved before the optimizer's first step?): its fp32 weights are "
        "written without them");
  }
  return notices;
}

Expected<UniversalStats>
ucp::convertToUniversal(const DeepSpeedCheckpoint &checkpoint,
                        llvm::StringRef output,
                        const UniversalOptions &options) {
  auto start = std::chrono::steady_clock::now();
  Expected<llvm::StringRef> folder =
      getCheckpointFolder(output, "latest_universal", checkpoint.getFolder());
  UniversalConverter converter(checkpoint, options);
  // Every process plans; should one fail alone, all stop.
  Error planned = folder ? converter.plan() : folder.takeError();
  if (options.group)
    planned = options.group->agree(std::move(planned));
  if (planned)
    return std::move(planned);
  GroupFingerprint plan = converter.divideOutputs();
  if (options.supplyInput)
    if (Error error = supplyReads(options.supplyInput, options.group,
                                  converter.getReads()))
      return std::move(error);
  // Missing parent folders are made, as DeepSpeed's converter makes them
  // (and removed again if the conversion fails); DeepSpeed's loader finds
  // the conversion through latest_universal.
  Expected<std::string> pointerNote = writeCheckpointFolderTogether(
      options.group, *folder, "latest_universal", checkpoint.getFolder(), plan,
      [&](llvm::StringRef staged) { return converter.write(staged); },
      options.syncOutputs);
  if (!pointerNote)
    return pointerNote.takeError();
  std::vector<int64_t> totals = {int64_t(converter.getFilesWritten()),
                                 converter.getBytesWritten()};
  if (Error error = sumOverGroup(options.group, totals))
    return std::move(error);
  UniversalStats stats;
  stats.notices = getMissingStateNotices(checkpoint);
  stats.pointerWritten = pointerNote->empty();
  if (!pointerNote->empty())
    stats.notices.push_back(std::move(*pointerNote));
  stats.parameters = converter.getPlans().size();
  stats.files = totals[0];
  stats.bytesWritten = totals[1];
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return stats;
}

//===- Transfer.cpp - Moving tensors between shard files ------------------===//

#include "ucp/Jobs/Transfer.h"
#include "ucp/Engine/GroupFingerprint.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/CudaExecutor.h"
#include "ucp/Formats/Safetensors/Safetensors.h"
#include "ucp/Formats/Safetensors/ShardFiles.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/CopyProgram.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/OutputFile.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <limits>
#include <set>
#include <unistd.h>

using namespace ucp;
using llvm::Expected;

TransferSide ucp::getFullTensorSide(llvm::ArrayRef<ParamMap> maps,
                                    llvm::StringRef file) {
  TransferSide side;
  side.mapOrigin = "the full tensors of the map";
  side.maps.reserve(maps.size()); // Growing would copy the maps.
  for (const ParamMap &map : maps)
    side.maps.push_back(getFullTensorMap(map));
  side.files[0] = file.str();
  return side;
}

TransferSide ucp::getShardSide(std::vector<ParamMap> maps,
                               llvm::StringRef dir) {
  TransferSide side;
  int64_t world = 1;
  for (const ParamMap &map : maps)
    world = std::max(world, map.worldSize);
  for (int64_t rank = 0; rank < world; ++rank) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path,
                            "rank_" + std::to_string(rank) + ".safetensors");
    side.files[rank] = path.str().str();
  }
  side.maps = std::move(maps);
  std::map<int64_t, std::string> strays;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int64_t rank;
    if (name.consume_front("rank_") && name.consume_back(".safetensors") &&
        !name.getAsInteger(10, rank) && rank >= world)
      strays[rank] = it->path();
  }
  for (auto &[rank, path] : strays)
    side.strayFiles.push_back(std::move(path));
  return side;
}

/// The folder holding `path` ("." for a bare file name).
static std::string getParentFolder(llvm::StringRef path) {
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  return parent.empty() ? "." : parent.str();
}

/// "DIR holds rank_4.safetensors and rank_5.safetensors, beyond the 4
/// ranks of the source map", for a side with stray files.
static std::string describeStrayFiles(const TransferSide &side,
                                      llvm::StringRef holds,
                                      llvm::StringRef role) {
  llvm::SmallString<256> folder(side.strayFiles.front());
  llvm::sys::path::remove_filename(folder);
  std::string text = (folder + " " + holds + " ").str();
  for (auto [i, path] : llvm::enumerate(side.strayFiles)) {
    if (i)
      text += i + 1 == side.strayFiles.size() ? " and " : ", ";
    text += llvm::sys::path::filename(path).str();
  }
  size_t world = side.files.size();
  return text + ", beyond the " + std::to_string(world) +
         (world == 1 ? " rank" : " ranks") + " of the " + role.str() + " map";
}

namespace {

/// A parameter's maps on both sides, its program and its element type.
struct ParamJob {
  const ParamMap *source;
  const ParamMap *target;
  const CopyProgram *program;
  /// Known once the source files have been read (with a group, once the
  /// processes have agreed on it).
  DType dtype = DType::F32;
};

/// One run of runTransfer, step by step: every check before any output
/// exists, then the outputs, the copies and the commit.
class TransferRun {
public:
  TransferRun(const TransferSide &source, const TransferSide &target,
              const TransferOptions &options)
      : source(source), target(target), options(options) {}

  llvm::Error pairJobs(const TransferPrograms &programs);
  llvm::Error checkFolders();
  llvm::Error openSources();
  llvm::Error agreeOnTypes();
  llvm::Error checkFactorsFit();
  llvm::Error createOutputs();
  llvm::Error execute();
  llvm::Error flush();
  llvm::Error commit();
  llvm::Error sumStats();

  TransferStats stats;

private:
  bool holdsSource(int64_t rank) const {
    return !options.group || options.group->holdsSource(rank);
  }
  bool holdsTarget(int64_t rank) const {
    return !options.group || options.group->holdsTarget(rank);
  }

  const TransferSide &source;
  const TransferSide &target;
  const TransferOptions &options;
  std::vector<ParamJob> jobs;
  /// The source files, read as a checkpoint; its tensors are the source
  /// maps, in order, as the jobs are.
  std::unique_ptr<ShardFilesCheckpoint> sources;
  std::map<int64_t, std::unique_ptr<SafetensorsWriter>> writers;
  /// Output folders this run made, removed again unless it succeeds.
  std::vector<std::string> createdFolders;
  bool succeeded = false;

public:
  ~TransferRun() {
    writers.clear(); // Removes the uncommitted files first.
    if (!succeeded)
      for (const std::string &folder : llvm::reverse(createdFolders))
        llvm::sys::fs::remove(folder);
  }
};

} // namespace

llvm::Error TransferRun::pairJobs(const TransferPrograms &programs) {
  std::map<std::string, const ParamMap *> targetByName;
  for (const ParamMap &map : target.maps)
    targetByName[map.name] = &map;
  for (const ParamMap &map : source.maps) {
    auto it = targetByName.find(map.name);
    if (it == targetByName.end())
      return makeError("parameter '" + map.name +
                       "' is in the source map but not in the target map");
    auto program = programs.find(map.name);
    if (program == programs.end())
      return makeError("parameter '" + map.name + "' has no plan");
    jobs.push_back({&map, it->second, &program->second});
    targetByName.erase(it);
  }
  if (!targetByName.empty())
    return makeError("parameter '" + targetByName.begin()->first +
                     "' is in the target map but not in the source map");
  return llvm::Error::success();
}

llvm::Error TransferRun::checkFolders() {
  if (!source.strayFiles.empty() && !options.ignoreExtraTensors)
    return makeError(describeStrayFiles(source, "holds", "source") +
                     ": shards of another topology? (--ignore-extra-tensors "
                     "reads only the map's ranks)");
  if (!target.strayFiles.empty())
    return makeError(describeStrayFiles(target, "already holds", "target") +
                     ": the folder would mix two topologies; remove them or "
                     "write elsewhere");
  // Outputs replace their files one rename at a time: writing over the
  // inputs, a crash between two renames would leave a set of shards of two
  // layouts that no map describes.
  std::set<llvm::sys::fs::UniqueID> inputs;
  for (const auto &[rank, path] : source.files) {
    llvm::sys::fs::UniqueID id;
    if (!llvm::sys::fs::getUniqueID(path, id))
      inputs.insert(id);
  }
  for (const auto &[rank, path] : target.files) {
    if (!holdsTarget(rank))
      continue;
    llvm::sys::fs::UniqueID id;
    if (!llvm::sys::fs::getUniqueID(path, id) && inputs.count(id))
      return makeError(path + " is both read and written: write the outputs "
                              "to another place, then move them");
    // Found now rather than at the final rename, after all the work; a
    // missing folder is created later.
    if (llvm::sys::fs::exists(getParentFolder(path)))
      if (llvm::Error error = checkOutputPath(path))
        return error;
  }
  return llvm::Error::success();
}

llvm::Error TransferRun::openSources() {
  Expected<std::unique_ptr<ShardFilesCheckpoint>> opened =
      ShardFilesCheckpoint::open(
          source.maps, source.files,
          {source.mapOrigin, options.ignoreExtraTensors,
           [this](int64_t rank) { return holdsSource(rank); }});
  if (!opened)
    return opened.takeError();
  sources = std::move(*opened);
  stats.bytesRead = sources->getBytesRead();
  return llvm::Error::success();
}

llvm::Error TransferRun::agreeOnTypes() {
  // Each process knows the types of the shards it read: per parameter, the
  // largest code and the largest negated code, so that a disagreement
  // shows as two different codes. A parameter no process holds a shard of
  // is F32, as in one process.
  std::vector<int64_t> codes;
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::optional<DType> read = sources->getReadType(i);
    int64_t code = read ? static_cast<int64_t>(*read) : -1;
    codes.push_back(code);
    codes.push_back(read ? -code : std::numeric_limits<int64_t>::min());
  }
  if (options.group)
    if (llvm::Error error =
            options.group->reduce(codes, ProcessGroup::Reduction::Max))
      return error;
  for (auto [i, job] : llvm::enumerate(jobs)) {
    int64_t highest = codes[2 * i];
    int64_t lowest = -codes[2 * i + 1];
    if (highest >= 0 && highest != lowest)
      return makeError("parameter '" + job.source->name + "' is " +
                       getSafetensorsName(static_cast<DType>(lowest)).str() +
                       " on some processes' ranks and " +
                       getSafetensorsName(static_cast<DType>(highest)).str() +
                       " on others'");
    job.dtype = highest < 0 ? DType::F32 : static_cast<DType>(highest);
    sources->setType(i, job.dtype);
  }
  return llvm::Error::success();
}

llvm::Error TransferRun::checkFactorsFit() {
  for (const ParamJob &job : jobs) {
    for (const TransferSide *side : {&source, &target}) {
      const ParamMap &map = side == &source ? *job.source : *job.target;
      if (llvm::Error error =
              checkScalesFit(map, job.dtype, options.scalePower))
        return makeError(side->mapOrigin + ": " +
                         llvm::toString(std::move(error)));
    }
    if (llvm::Error error =
            checkScalePower(*job.program, job.source->name, options.scalePower))
      return error;
    if (llvm::Error error = checkFactors(*job.program, job.dtype,
                                         job.source->name, options.scalePower))
      return error;
  }
  return llvm::Error::success();
}

llvm::Error TransferRun::createOutputs() {
  // Output folders are created now, after every check, and removed again if
  // the run fails (the writers, destroyed first, remove their files).
  for (const auto &[rank, path] : target.files) {
    std::string folder = getParentFolder(path);
    if (!holdsTarget(rank) || llvm::sys::fs::exists(folder))
      continue;
    if (std::error_code ec = llvm::sys::fs::create_directories(folder))
      return makeError("cannot create " + folder + ": " + ec.message());
    createdFolders.push_back(folder);
  }
  // The outputs, at full size, under temporary names.
  std::map<int64_t, std::vector<TensorInfo>> tensorsByRank;
  for (const ParamJob &job : jobs)
    for (const Shard &shard : job.target->shards)
      tensorsByRank[shard.rank].push_back(
          {job.target->name, job.dtype, shard.shape, 0, 0});
  for (const auto &[rank, path] : target.files) {
    if (!holdsTarget(rank))
      continue;
    Expected<std::unique_ptr<SafetensorsWriter>> writer =
        SafetensorsWriter::create(path, std::move(tensorsByRank[rank]));
    if (!writer)
      return writer.takeError();
    writers[rank] = std::move(*writer);
  }
  return llvm::Error::success();
}

llvm::Error TransferRun::execute() {
  CpuExecutor cpu(options.threads);
  CudaExecutor gpu;
  Executor &executor = options.group ? static_cast<Executor &>(*options.group)
                       : options.device == TransferOptions::Device::Cuda
                           ? static_cast<Executor &>(gpu)
                           : cpu;
  // The source shards this process holds, bound to its runs; each run at
  // the power of the scale the tensors carry.
  std::vector<ProgramRun> runs;
  for (auto [i, job] : llvm::enumerate(jobs)) {
    runs.push_back(sources->getRun(i, TensorState::Weight, *job.program));
    runs.back().scalePower = options.scalePower;
  }
  // On the GPU, one compiled module per element type.
  if (llvm::Error error = executor.prepare(runs))
    return error;
  stats.gpuArchitecture = gpu.getArchitecture();

  auto lastReport = std::chrono::steady_clock::now();
  std::vector<ProgramRun> batch;
  int64_t batchBytes = 0;
  for (auto [i, job] : llvm::enumerate(jobs)) {
    ProgramRun &run = runs[i];
    std::map<int64_t, const char *> sourceData;
    for (const auto &[rank, data] : run.buffers.sources)
      sourceData[rank] = static_cast<const char *>(data);
    if (options.checkReplicas)
      if (llvm::Error error =
              checkReplicas(*job.source, sourceData, getElementSize(run.type)))
        return error;
    for (const Shard &shard : job.target->shards) {
      // Every process counts every target byte, so that all cut batches at
      // the same parameters; each reports the bytes it writes.
      batchBytes += *getNumBytes(shard.shape, run.type);
      if (!holdsTarget(shard.rank))
        continue;
      run.buffers.targets[shard.rank] =
          writers.at(shard.rank)->getData(job.target->name);
      // The writer sized this tensor, so its bytes fit in int64.
      stats.bytesWritten += *getNumBytes(shard.shape, run.type);
    }
    batch.push_back(std::move(run));
    if (batchBytes >= executor.getBatchBytes() || i + 1 == jobs.size()) {
      llvm::Error error = executor.execute(batch);
      batch.clear();
      batchBytes = 0;
      if (error)
        return error;
    }
    ++stats.parameters;
    auto now = std::chrono::steady_clock::now();
    if (now - lastReport > std::chrono::seconds(1)) {
      if (llvm::Error error = reportProgress(options.progress, stats.parameters,
                                             jobs.size(), stats.bytesWritten))
        return error;
      lastReport = now;
    }
  }
  return llvm::Error::success();
}

llvm::Error TransferRun::flush() {
  // Every output is on disk before any takes its final name: a crash then
  // leaves no file of zeros under a final name.
  for (auto &[rank, writer] : writers)
    if (llvm::Error error = writer->flush(options.syncOutputs))
      return error;
  return llvm::Error::success();
}

llvm::Error TransferRun::commit() {
  for (auto &[rank, writer] : writers)
    if (llvm::Error error = writer->commit())
      return error;
  succeeded = true;
  if (!options.syncOutputs)
    return llvm::Error::success();
  std::set<std::string> folders;
  // A device or pipe written in place has no folder entry to sync.
  for (const auto &[rank, path] : target.files)
    if (holdsTarget(rank) && llvm::sys::fs::is_regular_file(path))
      folders.insert(getParentFolder(path));
  for (const std::string &folder : createdFolders)
    folders.insert(getParentFolder(folder));
  for (const std::string &folder : folders)
    if (std::error_code ec = syncFolder(folder))
      return makeError("the outputs are in place, but " + folder +
                       " could not be synced to disk: " + ec.message());
  return llvm::Error::success();
}

llvm::Error TransferRun::sumStats() {
  if (!options.group)
    return llvm::Error::success();
  std::vector<int64_t> bytes = {stats.bytesRead, stats.bytesWritten};
  if (llvm::Error error =
          options.group->reduce(bytes, ProcessGroup::Reduction::Sum))
    return error;
  stats.bytesRead = bytes[0];
  stats.bytesWritten = bytes[1];
  return llvm::Error::success();
}

/// Everything that decides what a transfer writes, for the processes of a
/// group to agree on (GroupFingerprint.h).
static GroupFingerprint getFingerprint(const TransferSide &source,
                                       const TransferSide &target,
                                       const TransferPrograms &programs,
                                       const TransferOptions &options) {
  auto joined = [](llvm::ArrayRef<int64_t> values) {
    std::string text;
    for (int64_t value : values)
      text += (text.empty() ? "" : ",") + std::to_string(value);
    return text.empty() ? std::string("every rank its own") : text;
  };
  const ReplicaPolicy &policy = options.policy;
  GroupFingerprint fingerprint;
  fingerprint.addValue("the replica policy",
                       getReplicaPolicyName(policy.kind).str() + " (" +
                           std::to_string(policy.ranksPerNode) +
                           " ranks per node)");
  fingerprint.addValue("the source processes",
                       joined(policy.sourceProcesses));
  fingerprint.addValue("the target processes",
                       joined(policy.targetProcesses));
  fingerprint.addValue("the scale power", std::to_string(options.scalePower));
  fingerprint.addValue("--ignore-extra-tensors",
                       options.ignoreExtraTensors ? "on" : "off");
  for (const auto *side : {&source, &target}) {
    llvm::StringRef name = side == &source ? "source" : "target";
    for (const auto &[rank, file] : side->files)
      fingerprint.addValue(("the " + name + " file of rank " +
                            std::to_string(rank)).str(),
                           file);
    for (const ParamMap &map : side->maps)
      fingerprint.addMap(("the " + name + " map of '" + map.name + "'").str(),
                         map);
  }
  for (const auto &[name, program] : programs)
    fingerprint.addProgram("the plan of '" + name + "'", program);
  return fingerprint;
}

Expected<TransferStats> ucp::runTransfer(const TransferSide &source,
                                         const TransferSide &target,
                                         const TransferPrograms &programs,
                                         const TransferOptions &options) {
  auto start = std::chrono::steady_clock::now();
  TransferRun run(source, target, options);
  ProcessGroup *group = options.group;
  // Each step is followed by an agreement across the group's processes: one
  // that fails makes all fail at the same step.
  auto agree = [&](llvm::Error error) {
    return group ? group->agree(std::move(error)) : std::move(error);
  };
  if (group && options.device != TransferOptions::Device::Cpu)
    return agree(makeError("a transfer across processes runs on the CPU"));
  if (group && options.checkReplicas)
    return agree(makeError("replicas are compared within one process only; "
                           "check them without the process group"));
  // Before any byte moves, every process checks that it was given the
  // job the others were: the group's rule for collective jobs.
  if (group)
    if (llvm::Error error = agreeOnFingerprint(
            *group, getFingerprint(source, target, programs, options)))
      return std::move(error);
  if (llvm::Error error = agree(run.pairJobs(programs)))
    return std::move(error);
  using Step = llvm::Error (TransferRun::*)();
  for (Step step :
       {&TransferRun::checkFolders, &TransferRun::openSources,
        &TransferRun::agreeOnTypes, &TransferRun::checkFactorsFit,
        &TransferRun::createOutputs, &TransferRun::execute, &TransferRun::flush,
        &TransferRun::commit, &TransferRun::sumStats})
    if (llvm::Error error = agree((run.*step)()))
      return std::move(error);
  run.stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return run.stats;
}

llvm::Error ucp::writeRandomFullTensors(llvm::ArrayRef<ParamMap> maps,
                                        llvm::StringRef file, DType type,
                                        uint64_t seed) {
  std::vector<TensorInfo> tensors;
  for (const ParamMap &map : maps)
    tensors.push_back(
        {map.name, type, getFullTensorMap(map).logicalShape, 0, 0});
  Expected<std::unique_ptr<SafetensorsWriter>> writer =
      SafetensorsWriter::create(file, tensors);
  if (!writer)
    return writer.takeError();
  for (auto [i, tensor] : llvm::enumerate(tensors))
    writeRandomElements(type, (*writer)->getData(tensor.name),
                        getNumElements(tensor.shape).value_or(0), seed + i);
  return (*writer)->commit();
}

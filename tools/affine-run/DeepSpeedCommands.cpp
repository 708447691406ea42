//===- DeepSpeedCommands.cpp - affine-run's DeepSpeed commands ------------===//
//
// ds-to-universal, ds-retarget, universal-to-ds, export and convert: each
// reads its options (DeepSpeedOptions.cpp; their synopses are in
// CommandHelp.cpp), runs the job of the library, and prints its summary.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedCommands.h"
#include "MpiRun.h"
#include "ucp/DeepSpeed/PipelineLayout.h"
#include "ucp/DeepSpeed/Retarget.h"
#include "ucp/DeepSpeed/UniversalConversion.h"
#include "ucp/Engine/GroupProgress.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Jobs/Export.h"
#include "ucp/Jobs/OpenCheckpoint.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace ucp;
using namespace ds;
namespace cl = llvm::cl;

/// With --mpi: the processes this run's job is shared by, and the
/// prefix naming this one in messages.
static ProcessGroup *jobGroup = nullptr;
/// The MPI run of the job, under --mpi.
static MpiRun *jobMpi = nullptr;
static std::string messagePrefix = "affine-run: ";
/// Under --node-local: the local folder this process reads, and the input
/// folder its messages name instead (a message relayed from another
/// process names that process's input folder: MpiGroup::showFolderAs).
static std::string localFolder, localInput;

static int fail(const llvm::Twine &message) {
  std::string text = replaceAll((messagePrefix + message + "\n").str(),
                                localFolder, localInput);
  // One write: the lines of processes sharing a terminal stay whole.
  llvm::errs() << text;
  return 1;
}

/// Whether this process reports: the only one, or process 0 of a group.
static bool reports() { return !jobGroup || jobGroup->getProcess() == 0; }

/// " across N processes" for a job shared by a group; empty otherwise.
static std::string describeGroup() {
  return jobGroup ? " across " + std::to_string(jobGroup->getProcessCount()) +
                        " processes"
                  : "";
}

/// ", N MB of the input brought from other processes" for a job whose
/// input is node-local (collective: the group's total); empty otherwise.
static llvm::Expected<std::string> describeInputReceived() {
  if (!MpiRun::isNodeLocal())
    return "";
  llvm::Expected<int64_t> bytes = jobMpi->getInputBytesReceived();
  if (!bytes)
    return bytes.takeError();
  return (", " + llvm::formatv("{0:F3}", *bytes / 1e6) +
          " MB of the input brought from other processes")
      .str();
}

/// This process's part of the checks a DeepSpeed checkpoint makes on open:
/// with a group, the processes share them.
static CheckShare getCheckShare() {
  if (!jobGroup)
    return {};
  return {jobGroup->getProcess(), jobGroup->getProcessCount()};
}

/// `opened`, once every process of the group has opened its input (an
/// input one process cannot read fails them all, and the checks each made
/// of it are the whole check).
template <typename T>
static llvm::Expected<T> agreeOnInput(llvm::Expected<T> opened) {
  if (!jobGroup)
    return opened;
  llvm::Error error = opened ? llvm::Error::success() : opened.takeError();
  if (llvm::Error agreed = jobGroup->agree(std::move(error)))
    return std::move(agreed);
  return opened;
}

bool isDeepSpeedCommand() {
  return static_cast<bool>(universalCommand) ||
         static_cast<bool>(retargetCommand) ||
         static_cast<bool>(fromUniversalCommand) ||
         static_cast<bool>(exportCommand) || static_cast<bool>(convertCommand);
}

/// Prints export's progress (the group's, under --mpi).
static bool printExportProgress(size_t done, size_t total, int64_t bytes) {
  llvm::errs() << "affine-run: " << done << "/" << total << " tensors, "
               << llvm::format("%.1f", bytes / 1e6) << " MB written\n";
  return true;
}

/// Under --node-local: makes `input` whole on this process (MpiRun::
/// openNodeLocal) and brings what opening it reads (supplyOpenReads);
/// returns the local folder to open.
static llvm::Expected<std::string> openNodeLocal(llvm::StringRef input,
                                                 InputSupply &supply) {
  llvm::Expected<std::string> local = jobMpi->openNodeLocal(input, supply);
  if (!local)
    return local.takeError();
  localFolder = *local;
  localInput = input.str();
  if (llvm::Error error =
          supplyOpenReads(*local, getCheckShare(), jobGroup, supply))
    return std::move(error);
  return local;
}

/// Writes the model of `checkpoint` into `folder` as safetensors files.
static int writeModel(const CheckpointSource &checkpoint,
                      llvm::StringRef folder, InputSupply supply = {}) {
  std::optional<int64_t> shardBytes = parseShardSize(maxShardSize);
  if (!shardBytes)
    return fail("--max-shard-size " + maxShardSize +
                ": expected a positive size, as 5GB, 500MB or 2GiB");
  ExportOptions options;
  options.dtype = exportType;
  options.maxShardBytes = *shardBytes;
  options.excludeFrozen = excludeFrozenParameters;
  options.syncOutputs = !universalNoSync;
  options.checkValues = !noValueCheck;
  options.group = jobGroup;
  options.supplyInput = std::move(supply);
  GroupProgress progress(jobGroup,
                         universalQuiet ? nullptr : printExportProgress);
  options.progress = progress.getFunction();
  llvm::Expected<ExportStats> stats = exportModel(checkpoint, folder, options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
  progress.finish();
  llvm::Expected<std::string> received = describeInputReceived();
  if (!received)
    return fail(llvm::toString(received.takeError()));
  if (!universalQuiet && reports())
    llvm::outs() << "export: " << stats->tensors << " tensors, " << stats->files
                 << (stats->files == 1 ? " file, " : " files, ")
                 << llvm::format("%.3f", stats->bytesWritten / 1e6) << " MB in "
                 << llvm::format("%.3f", stats->seconds) << " s"
                 << describeGroup() << *received << "\n";
  return 0;
}

static int runExport() {
  if (exportFolder.empty())
    return fail("--out is required");
  InputSupply supply;
  llvm::Expected<std::string> input =
      MpiRun::isNodeLocal() ? openNodeLocal(getInputFolder(), supply)
                            : getInputFolder();
  if (!input)
    return fail(llvm::toString(input.takeError()));
  llvm::Expected<std::unique_ptr<CheckpointSource>> checkpoint =
      agreeOnInput(openCheckpoint(*input, getCheckShare()));
  if (!checkpoint)
    return fail(llvm::toString(checkpoint.takeError()));
  return writeModel(**checkpoint, exportFolder, supply);
}

static bool printProgress(size_t done, size_t total, int64_t bytes) {
  llvm::errs() << "affine-run: " << done << "/" << total << " files, "
               << llvm::format("%.1f", bytes / 1e6)
               << " MB of tensors written\n";
  return true;
}

/// Reads --pp, --pp-partition and --pp-tied into `options`; nonzero, with
/// the message printed, when one is malformed.
static int readPipelineOptions(RetargetOptions &options) {
  if (targetPp.getNumOccurrences())
    options.pp = targetPp;
  if (ppPartition.getNumOccurrences()) {
    if (!options.pp)
      return fail("--pp-partition: give the target's stage count, --pp");
    llvm::Expected<std::vector<int64_t>> parts =
        parsePipelinePartition(ppPartition, *options.pp);
    if (!parts)
      return fail(llvm::toString(parts.takeError()));
    options.ppPartition = std::move(*parts);
  }
  for (llvm::StringRef entry : ppTied) {
    auto [key, list] = entry.split('=');
    llvm::SmallVector<llvm::StringRef> fields;
    list.split(fields, ',');
    if (options.ppTiedLayers.count(key.str()))
      return fail("--pp-tied " + entry + ": tied module '" + key +
                  "' is given twice");
    std::vector<int64_t> &layers = options.ppTiedLayers[key.str()];
    bool wellFormed = !key.empty();
    for (llvm::StringRef field : fields) {
      int64_t layer = 0;
      wellFormed &= !field.trim().getAsInteger(10, layer) && layer >= 0;
      layers.push_back(layer);
    }
    if (!wellFormed)
      return fail("--pp-tied " + entry +
                  ": expected KEY=L1,L2,... (a tied module's key and the "
                  "layers using it)");
  }
  return 0;
}

/// Writes `checkpoint` at the target the command line gives; at `stage`
/// where it gives none.
static int runRetarget(const DeepSpeedCheckpoint &checkpoint,
                       std::optional<int> stage = std::nullopt,
                       InputSupply supply = {}) {
  RetargetOptions options;
  if (targetDp.getNumOccurrences())
    options.dp = targetDp;
  else if (checkpoint.isFresh())
    return fail("--dp is required: weights alone have no DP degree");
  else
    options.dp = checkpoint.getRecordedDpDegree();
  if (targetStage.getNumOccurrences())
    options.zeroStage = targetStage;
  else
    options.zeroStage = stage;
  if (targetTp.getNumOccurrences())
    options.tp = targetTp;
  if (targetAutoEpSize.getNumOccurrences())
    options.autoEpSize = targetAutoEpSize;
  if (!targetMapFile.empty()) {
    // As every map document is read: regular files only, nesting bounded.
    llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> text =
        readTextInputFile(targetMapFile, TextSyntax::Json);
    if (!text)
      return fail(llvm::toString(text.takeError()));
    llvm::Expected<std::vector<ParamMap>> maps =
        parseMapDocument((*text)->getBuffer());
    if (!maps)
      return fail(targetMapFile + ": " + llvm::toString(maps.takeError()));
    if (maps->empty())
      return fail(targetMapFile + ": no parameter is mapped");
    options.targetMaps = std::move(*maps);
  }
  if (int error = readPipelineOptions(options))
    return error;
  if (numKvHeads.getNumOccurrences()) {
    if (numKvHeads < 1)
      return fail("--num-kv-heads " + std::to_string(numKvHeads) +
                  ": expected >= 1");
    options.numKvHeads = numKvHeads;
  }
  options.threads = universalThreads;
  options.syncOutputs = !universalNoSync;
  options.checkValues = !noValueCheck;
  options.group = jobGroup;
  options.supplyInput = std::move(supply);
  GroupProgress progress(jobGroup, universalQuiet ? nullptr : printProgress);
  options.progress = progress.getFunction();
  llvm::Expected<RetargetStats> stats =
      retargetCheckpoint(checkpoint, getOutputFolder(), options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
  progress.finish();
  llvm::Expected<std::string> received = describeInputReceived();
  if (!received)
    return fail(llvm::toString(received.takeError()));
  if (!reports())
    return 0;
  if (!stats->pointerNote.empty())
    llvm::errs() << "affine-run: notice: " << stats->pointerNote << "\n";
  if (!universalQuiet)
    llvm::outs()
        << (checkpoint.isFresh()
                ? std::string("convert: weights")
                : (checkpoint.isUniversal() ? "universal-to-ds: Universal, TP "
                                            : "ds-retarget: TP ") +
                      std::to_string(checkpoint.getTpDegree()) +
                      (checkpoint.isPipeline()
                           ? " x PP " +
                                 std::to_string(checkpoint.getPipelineDegree())
                           : "") +
                      " x DP " +
                      std::to_string(checkpoint.getDpDegree()) + " ZeRO-" +
                      std::to_string(checkpoint.getZeroStage()))
        << " -> TP "
        << options.tp.value_or(options.targetMaps.empty()
                                   ? checkpoint.getTpDegree()
                                   : options.targetMaps[0].worldSize)
        << (checkpoint.isPipeline()
                ? " x PP " + std::to_string(options.pp.value_or(
                                 checkpoint.getPipelineDegree()))
                : "")
        << " x DP " << options.dp << " ZeRO-"
        << options.zeroStage.value_or(checkpoint.getZeroStage())
        << (checkpoint.getAutoEpSize()
                ? " autoep_size " + std::to_string(options.autoEpSize.value_or(
                                        checkpoint.getAutoEpSize()))
                : "")
        << ", " << stats->files << " files"
        << (stats->pointerNote.empty() ? " and latest" : "") << ", "
        << llvm::format("%.3f", stats->bytesWritten / 1e6)
        << " MB of partitions in " << llvm::format("%.3f", stats->seconds)
        << " s" << describeGroup() << *received << "\n";
  return 0;
}

/// Reads the JSON file `path` given as --`flag`.
static llvm::Expected<llvm::json::Value> readJsonFile(llvm::StringRef path,
                                                      llvm::StringRef flag) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> text =
      readTextInputFile(path, TextSyntax::Json);
  if (!text)
    return text.takeError();
  llvm::Expected<llvm::json::Value> value =
      llvm::json::parse((*text)->getBuffer());
  if (!value)
    return makeError("--" + flag + " " + path + ": " +
                     llvm::toString(value.takeError()));
  return std::move(*value);
}

/// The options of a DeepSpeed checkpoint made from `weights`, from the
/// command line.
static llvm::Expected<FreshCheckpointOptions>
getFreshOptions(const CheckpointSource &weights) {
  FreshCheckpointOptions options;
  if (!paramGroupsFile.empty()) {
    llvm::Expected<llvm::json::Value> groups =
        readJsonFile(paramGroupsFile, "param-groups");
    if (!groups)
      return groups.takeError();
    // Each group a list of names, or a torch param group: {"params":
    // [names], its own hyper-parameters}.
    const llvm::json::Array *lists = groups->getAsArray();
    for (const llvm::json::Value &entry :
         lists ? *lists : llvm::json::Array()) {
      FreshParamGroup &group = options.groups.emplace_back();
      const llvm::json::Array *names = entry.getAsArray();
      if (const llvm::json::Object *object = entry.getAsObject()) {
        names = object->getArray("params");
        for (const auto &[key, value] : *object)
          if (key != "params")
            group.hyper[key] = value;
      }
      for (const llvm::json::Value &name : names ? *names : llvm::json::Array())
        if (std::optional<llvm::StringRef> text = name.getAsString())
          group.names.push_back(text->str());
      if (!names || group.names.size() != names->size())
        lists = nullptr;
    }
    if (!lists)
      return makeError("--param-groups " + paramGroupsFile +
                       ": expected a list of parameter groups, each a list "
                       "of parameter names or {\"params\": [names], "
                       "hyper-parameters}");
  }
  if (!dsConfigFile.empty()) {
    llvm::Expected<llvm::json::Value> config =
        readJsonFile(dsConfigFile, "ds-config");
    if (!config)
      return config.takeError();
    if (!config->getAsObject())
      return makeError("--ds-config " + dsConfigFile + ": expected an object");
    options.config = *config->getAsObject();
  }
  if (!universalInfoFile.empty()) {
    llvm::Expected<llvm::json::Value> info =
        readJsonFile(universalInfoFile, "universal-info");
    if (!info)
      return info.takeError();
    options.universalInfo = std::move(*info);
  }
  // The weights' own type, unless one is chosen or they have several.
  options.modelType = exportType;
  if (!exportType.getNumOccurrences()) {
    std::set<DType> types;
    for (const CheckpointTensor &tensor : weights.getTensors())
      if (std::optional<DType> type = tensor.getType(TensorState::Weight))
        types.insert(*type);
    if (types.size() > 1)
      return makeError(weights.getPath() +
                       ": weights of several types; choose the model's "
                       "with --dtype");
    if (types.size() == 1)
      options.modelType = *types.begin();
  }
  return options;
}

static int runConvert() {
  if (convertSource.empty())
    return fail("--from is required");
  if (getOutputFolder().empty())
    return fail("--output_folder is required");
  CheckpointFormat format = detectCheckpointFormat(convertSource);
  bool fromWeights = format == CheckpointFormat::Safetensors;
  if (!fromWeights && (!paramGroupsFile.empty() || !dsConfigFile.empty() ||
                       !universalInfoFile.empty()))
    return fail("--param-groups, --ds-config and --universal-info make a "
                "checkpoint from weights alone; " +
                convertSource + " is a DeepSpeed checkpoint");
  if (convertTarget == ConvertTarget::Safetensors) {
    llvm::Expected<std::unique_ptr<CheckpointSource>> checkpoint =
        agreeOnInput(openCheckpoint(convertSource, getCheckShare()));
    if (!checkpoint)
      return fail(llvm::toString(checkpoint.takeError()));
    return writeModel(**checkpoint, getOutputFolder());
  }
  if (!fromWeights) {
    llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> checkpoint =
        agreeOnInput(format == CheckpointFormat::Universal
                         ? DeepSpeedCheckpoint::openUniversal(convertSource)
                         : DeepSpeedCheckpoint::open(convertSource,
                                                     getCheckShare()));
    if (!checkpoint)
      return fail(llvm::toString(checkpoint.takeError()));
    return runRetarget(**checkpoint);
  }
  llvm::Expected<std::unique_ptr<CheckpointSource>> weights =
      agreeOnInput(openCheckpoint(convertSource, getCheckShare()));
  if (!weights)
    return fail(llvm::toString(weights.takeError()));
  llvm::Expected<FreshCheckpointOptions> options =
      agreeOnInput(getFreshOptions(**weights));
  if (!options)
    return fail(llvm::toString(options.takeError()));
  // A fresh run's stage is given, or its config's; nothing else says.
  const llvm::json::Object *zero =
      options->config.getObject("zero_optimization");
  std::optional<int64_t> stage =
      zero ? zero->getInteger("stage") : std::nullopt;
  if (!targetStage.getNumOccurrences() && !stage)
    return fail("--zero-stage is required (or a --ds-config with "
                "zero_optimization.stage)");
  llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> checkpoint =
      agreeOnInput(DeepSpeedCheckpoint::openFresh(**weights, *options));
  if (!checkpoint)
    return fail(llvm::toString(checkpoint.takeError()));
  return runRetarget(**checkpoint, stage);
}

/// Runs the command named, in this process alone or, with --mpi, shared
/// by the processes of MPI.
static int runCommand() {
  if (convertCommand)
    return runConvert();
  const std::string &inputFolder = getInputFolder();
  if (inputFolder.empty())
    return fail("--input_folder is required");
  if (exportCommand)
    return runExport();
  if (getOutputFolder().empty())
    return fail("--output_folder is required");
  InputSupply supply;
  llvm::Expected<std::string> input =
      MpiRun::isNodeLocal() ? openNodeLocal(inputFolder, supply) : inputFolder;
  if (!input)
    return fail(llvm::toString(input.takeError()));
  llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> checkpoint =
      agreeOnInput(fromUniversalCommand
                       ? DeepSpeedCheckpoint::openUniversal(*input)
                       : DeepSpeedCheckpoint::open(*input, getCheckShare()));
  if (!checkpoint)
    return fail(llvm::toString(checkpoint.takeError()));
  if (retargetCommand || fromUniversalCommand)
    return runRetarget(**checkpoint, std::nullopt, supply);
  UniversalOptions options;
  options.threads = universalThreads;
  options.injectMissingState = injectMissingState;
  options.strict = !noStrict;
  options.syncOutputs = !universalNoSync;
  options.checkValues = !noValueCheck;
  options.group = jobGroup;
  options.supplyInput = supply;
  GroupProgress progress(jobGroup, universalQuiet ? nullptr : printProgress);
  options.progress = progress.getFunction();
  llvm::Expected<UniversalStats> stats =
      convertToUniversal(**checkpoint, getOutputFolder(), options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
  progress.finish();
  llvm::Expected<std::string> received = describeInputReceived();
  if (!received)
    return fail(llvm::toString(received.takeError()));
  if (!reports())
    return 0;
  for (const std::string &notice : stats->notices)
    llvm::errs() << "affine-run: notice: " << notice << "\n";
  if (!universalQuiet)
    llvm::outs() << "ds-to-universal: " << stats->parameters
                 << " parameters of a ZeRO-" << (*checkpoint)->getZeroStage()
                 << " checkpoint (TP " << (*checkpoint)->getTpDegree()
                 << " x DP " << (*checkpoint)->getDpDegree() << "), "
                 << stats->files << " files"
                 << (stats->pointerWritten ? " and latest_universal" : "")
                 << ", " << llvm::format("%.3f", stats->bytesWritten / 1e6)
                 << " MB of tensors in " << llvm::format("%.3f", stats->seconds)
                 << " s" << describeGroup() << *received << "\n";
  return 0;
}

int runDeepSpeedCommand(MpiRun &mpi, llvm::ArrayRef<const char *> arguments) {
  if (MpiRun::isRequested()) {
    llvm::Expected<ProcessGroup *> group = mpi.startJob(
        universalThreads, arguments, convertCommand ? "" : getInputFolder());
    messagePrefix =
        "affine-run: process " + std::to_string(mpi.getProcess()) + ": ";
    if (!group)
      return fail(llvm::toString(group.takeError()));
    jobGroup = *group;
  }
  jobMpi = &mpi;
  int code = runCommand();
  jobGroup = nullptr;
  jobMpi = nullptr;
  localFolder.clear();
  localInput.clear();
  return code;
}

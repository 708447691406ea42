//===- DeepSpeedCommands.cpp - affine-run's DeepSpeed commands ------------===//
//
//   affine-run ds-to-universal --input_folder CKPT/TAG --output_folder OUT
//       [--inject_missing_state] [--no_strict] [--threads N] [--no-sync]
//   affine-run ds-retarget --input_folder CKPT/TAG --output_folder OUT/TAG
//   affine-run universal-to-ds --input_folder UNIV --output_folder OUT/TAG
//       (either of the two with)
//       --dp M [--tp N [--num-kv-heads K] | --target-map FILE]
//       [--zero-stage S] [--autoep-size E] [--threads N] [--no-sync]
//   affine-run export --input_folder CKPT/TAG|UNIV|SAFETENSORS --out DIR
//       [--dtype fp32|bf16|fp16] [--max-shard-size 5GB] [--no-sync]
//   affine-run convert --from CKPT/TAG|UNIV|SAFETENSORS --to deepspeed
//       --output_folder OUT/TAG --dp M [--tp N --universal-info FILE |
//       --target-map FILE] [--zero-stage S] [--param-groups FILE]
//       [--ds-config FILE] [--dtype bf16|fp16|fp32]
//   affine-run convert --from ... --to safetensors --output_folder DIR
//       (export's options)
//
// ds-to-universal's options are spelt as DeepSpeed's ds_to_universal.py
// spells them, so that the command drops into scripts written for it.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedCommands.h"
#include "ucp/DeepSpeed/PipelineLayout.h"
#include "ucp/DeepSpeed/Retarget.h"
#include "ucp/DeepSpeed/UniversalConversion.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Jobs/Export.h"
#include "ucp/Jobs/OpenCheckpoint.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace ucp;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &getDeepSpeedCategory() {
  static cl::OptionCategory category("DeepSpeed checkpoint options");
  return category;
}

static cl::SubCommand
    universalCommand("ds-to-universal",
                     "convert a DeepSpeed ZeRO checkpoint to a Universal "
                     "checkpoint, as DeepSpeed's ds_to_universal.py does");
static cl::SubCommand
    retargetCommand("ds-retarget",
                    "write the DeepSpeed ZeRO checkpoint a job at another DP "
                    "or TP degree or ZeRO stage would have saved");
static cl::SubCommand fromUniversalCommand(
    "universal-to-ds",
    "write the DeepSpeed ZeRO checkpoint a job at the given topology would "
    "have saved after loading a Universal checkpoint (load_universal, "
    "offline)");
static cl::SubCommand
    exportCommand("export",
                  "write the consolidated model of a DeepSpeed or Universal "
                  "checkpoint as safetensors files, as zero_to_fp32.py does, "
                  "memory bounded by the largest tensor");
static cl::SubCommand convertCommand(
    "convert",
    "write any checkpoint affine-run reads (safetensors files or a Hugging "
    "Face sharded set, a DeepSpeed or Universal checkpoint) in another "
    "format: a DeepSpeed ZeRO checkpoint at a topology (from weights alone, "
    "with an optimizer before its first step), or safetensors files");
static cl::opt<std::string>
    inputFolder("input_folder",
                cl::desc("the checkpoint folder, CKPT/TAG (the folder of "
                         "*_model_states.pt and *_optim_states.pt files), or "
                         "the Universal checkpoint's folder (of zero/ and "
                         "the model states)"),
                cl::value_desc("folder"), cl::sub(universalCommand),
                cl::sub(retargetCommand), cl::sub(fromUniversalCommand),
                cl::sub(exportCommand), cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string>
    convertSource("from",
                  cl::desc("what to convert: a safetensors file, a folder of "
                           "them (or of a Hugging Face index and its files), "
                           "a DeepSpeed checkpoint folder CKPT/TAG or a "
                           "Universal checkpoint folder"),
                  cl::value_desc("path"), cl::sub(convertCommand),
                  cl::cat(getDeepSpeedCategory()));
enum class ConvertTarget { DeepSpeed, Safetensors };
static cl::opt<ConvertTarget> convertTarget(
    "to", cl::desc("the format to write"),
    cl::values(clEnumValN(ConvertTarget::DeepSpeed, "deepspeed",
                          "a DeepSpeed ZeRO checkpoint (--output_folder "
                          "OUT/TAG) at --dp, --tp and --zero-stage"),
               clEnumValN(ConvertTarget::Safetensors, "safetensors",
                          "the consolidated model, as export writes it")),
    cl::Required, cl::sub(convertCommand), cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string> paramGroupsFile(
    "param-groups",
    cl::desc("from weights alone: the optimizer's parameter groups, a JSON "
             "list of lists of parameter names in the order of the model's "
             "parameters(), which ZeRO flattens them in (Python: "
             "json.dump([[n for n, _ in model.named_parameters()]], f)); "
             "required for more than one tensor"),
    cl::value_desc("FILE"), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string> dsConfigFile(
    "ds-config",
    cl::desc("from weights alone: the run's DeepSpeed config (JSON), kept in "
             "the files; its optimizer.params are the parameter groups' "
             "hyper-parameters, which DeepSpeed's loader restores (default: "
             "torch Adam's)"),
    cl::value_desc("FILE"), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string> universalInfoFile(
    "universal-info",
    cl::desc("from weights alone: universal_checkpoint_info (JSON), whose "
             "rules split the parameters into --tp ranks"),
    cl::value_desc("FILE"), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string>
    exportFolder("out",
                 cl::desc("the new folder of model.safetensors, or of "
                          "model-0000i-of-0000N.safetensors and "
                          "model.safetensors.index.json"),
                 cl::value_desc("folder"), cl::sub(exportCommand),
                 cl::cat(getDeepSpeedCategory()));
static cl::opt<DType> exportType(
    "dtype", cl::desc("the floating-point tensors' dtype (default fp32)"),
    cl::values(clEnumValN(DType::F32, "fp32", "the fp32 masters as they are"),
               clEnumValN(DType::BF16, "bf16", "rounded to nearest even"),
               clEnumValN(DType::F16, "fp16", "rounded to nearest even")),
    cl::init(DType::F32), cl::sub(convertCommand), cl::sub(exportCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string> maxShardSize(
    "max-shard-size",
    cl::desc("the most tensor bytes per file, as 5GB, 500MB, 2GiB or a "
             "number of bytes (default 5GB)"),
    cl::init("5GB"), cl::sub(convertCommand), cl::sub(exportCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string> outputFolder(
    "output_folder",
    cl::desc("the new folder, PARENT/NAME: of the Universal checkpoint "
             "(PARENT/latest_universal names it), or OUT/TAG of the "
             "DeepSpeed one (OUT/latest names TAG). A bare NAME is refused "
             "(write ./NAME for the current folder), as is a folder inside "
             "the input; a pointer file naming the input is left as it is"),
    cl::value_desc("folder"), cl::sub(universalCommand),
    cl::sub(retargetCommand), cl::sub(fromUniversalCommand),
    cl::sub(convertCommand), cl::cat(getDeepSpeedCategory()));
static cl::opt<bool> injectMissingState(
    "inject_missing_state",
    cl::desc("convert a ZeRO-1/2 checkpoint without universal_checkpoint_info "
             "as one without tensor parallelism"),
    cl::sub(universalCommand), cl::cat(getDeepSpeedCategory()));
static cl::opt<bool>
    noStrict("no_strict",
             cl::desc("accept universal_checkpoint_info patterns that match no "
                      "parameter"),
             cl::sub(universalCommand), cl::cat(getDeepSpeedCategory()));
static cl::opt<unsigned> universalThreads(
    "threads",
    cl::desc("worker threads (default: every core this process may run on)"),
    cl::init(0), cl::sub(universalCommand), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<bool> universalNoSync(
    "no-sync",
    cl::desc("return without waiting for the outputs to reach the disk"),
    cl::sub(universalCommand), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(exportCommand),
    cl::sub(convertCommand), cl::cat(getDeepSpeedCategory()));
static cl::opt<bool>
    universalQuiet("quiet", cl::desc("print no progress or summary"),
                   cl::sub(universalCommand), cl::sub(retargetCommand),
                   cl::sub(fromUniversalCommand), cl::sub(exportCommand),
                   cl::sub(convertCommand), cl::cat(getDeepSpeedCategory()));
static cl::opt<int64_t> targetDp("dp", cl::desc("the target's DP degree"),
                                 cl::value_desc("M"), cl::sub(retargetCommand),
                                 cl::sub(fromUniversalCommand),
                                 cl::sub(convertCommand),
                                 cl::cat(getDeepSpeedCategory()));
static cl::opt<int64_t> targetTp(
    "tp",
    cl::desc("the target's TP degree (default: the source's); another "
             "degree splits each parameter by universal_checkpoint_info's "
             "rules"),
    cl::value_desc("N"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<int64_t> targetPp(
    "pp",
    cl::desc("a pipeline (PipelineModule) checkpoint's target stage count "
             "(default: the source's); above 1, another count needs "
             "--pp-partition"),
    cl::value_desc("P"), cl::sub(retargetCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string> ppPartition(
    "pp-partition",
    cl::desc("the layers each target stage runs: DeepSpeed's "
             "PipelineModule.parts as B0,B1,...,BP (stage s runs layers "
             "[Bs, Bs+1)), or uniform:L for partition_method 'uniform' over "
             "L layers"),
    cl::value_desc("PARTS"), cl::sub(retargetCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::list<std::string> ppTied(
    "pp-tied",
    cl::desc("the layers using tied module KEY (TiedLayerSpec), whose stages "
             "all hold its parameters; needed at another stage count above 1 "
             "(repeat for each key)"),
    cl::value_desc("KEY=L1,L2"), cl::sub(retargetCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<int64_t> numKvHeads(
    "num-kv-heads",
    cl::desc("the model's num_kv_heads, which DeepSpeed's split of attention "
             "weights at a new TP degree depends on, where the checkpoint "
             "does not record it"),
    cl::value_desc("K"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<std::string> targetMapFile(
    "target-map",
    cl::desc("explicit maps of the target's parameters over its TP ranks (a "
             "map document) instead of universal_checkpoint_info's split "
             "rules; their world size is the target's TP degree"),
    cl::value_desc("FILE"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::opt<int>
    targetStage("zero-stage",
                cl::desc("the target's ZeRO stage, 1, 2 or 3 (default: the "
                         "source's)"),
                cl::value_desc("S"), cl::sub(retargetCommand),
                cl::sub(fromUniversalCommand), cl::sub(convertCommand),
                cl::cat(getDeepSpeedCategory()));
static cl::opt<int64_t> targetAutoEpSize(
    "autoep-size",
    cl::desc("an AutoEP checkpoint's target autoep_size (default: the "
             "source's): the EP degree every AutoEP layer's experts are "
             "placed over; it must divide every layer's expert count and "
             "--dp"),
    cl::value_desc("E"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::cat(getDeepSpeedCategory()));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "affine-run: " << message << "\n";
  return 1;
}

bool isDeepSpeedCommand() {
  return static_cast<bool>(universalCommand) ||
         static_cast<bool>(retargetCommand) ||
         static_cast<bool>(fromUniversalCommand) ||
         static_cast<bool>(exportCommand) || static_cast<bool>(convertCommand);
}

/// Parses a size as Hugging Face writes it: a number of bytes, or one with
/// a unit of KB, MB, GB (powers of 1000) or KiB, MiB, GiB (of 1024).
static std::optional<int64_t> parseSize(llvm::StringRef text) {
  static const std::pair<llvm::StringRef, int64_t> kUnits[] = {
      {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", int64_t(1) << 30},
      {"KB", 1000},     {"MB", 1000000},  {"GB", 1000000000}};
  int64_t unit = 1;
  for (auto [suffix, factor] : kUnits)
    if (text.consume_back(suffix)) {
      unit = factor;
      break;
    }
  uint64_t count = 0;
  if (text.getAsInteger(10, count) || count == 0 ||
      count > uint64_t(INT64_MAX / unit))
    return std::nullopt;
  return static_cast<int64_t>(count) * unit;
}

/// Writes the model of `checkpoint` into `folder` as safetensors files.
static int writeModel(const CheckpointSource &checkpoint,
                      llvm::StringRef folder) {
  std::optional<int64_t> shardBytes = parseSize(maxShardSize);
  if (!shardBytes)
    return fail("--max-shard-size " + maxShardSize +
                ": expected a positive size, as 5GB, 500MB or 2GiB");
  ExportOptions options;
  options.dtype = exportType;
  options.maxShardBytes = *shardBytes;
  options.syncOutputs = !universalNoSync;
  if (!universalQuiet)
    options.progress = [](size_t done, size_t total, int64_t bytes) {
      llvm::errs() << "affine-run: " << done << "/" << total << " tensors, "
                   << llvm::format("%.1f", bytes / 1e6) << " MB written\n";
      return true;
    };
  llvm::Expected<ExportStats> stats = exportModel(checkpoint, folder, options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
  if (!universalQuiet)
    llvm::outs() << "export: " << stats->tensors << " tensors, " << stats->files
                 << " files, "
                 << llvm::format("%.3f", stats->bytesWritten / 1e6) << " MB in "
                 << llvm::format("%.3f", stats->seconds) << " s\n";
  return 0;
}

static int runExport() {
  if (exportFolder.empty())
    return fail("--out is required");
  llvm::Expected<std::unique_ptr<CheckpointSource>> checkpoint =
      openCheckpoint(inputFolder);
  if (!checkpoint)
    return fail(llvm::toString(checkpoint.takeError()));
  return writeModel(**checkpoint, exportFolder);
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
                       std::optional<int> stage = std::nullopt) {
  if (!targetDp.getNumOccurrences())
    return fail("--dp is required");
  RetargetOptions options;
  options.dp = targetDp;
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
  if (!universalQuiet)
    options.progress = printProgress;
  llvm::Expected<RetargetStats> stats =
      retargetCheckpoint(checkpoint, outputFolder, options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
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
        << ", " << stats->files << " files, "
        << llvm::format("%.3f", stats->bytesWritten / 1e6)
        << " MB of partitions in " << llvm::format("%.3f", stats->seconds)
        << " s\n";
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
  if (outputFolder.empty())
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
        openCheckpoint(convertSource);
    if (!checkpoint)
      return fail(llvm::toString(checkpoint.takeError()));
    return writeModel(**checkpoint, outputFolder);
  }
  if (!fromWeights) {
    llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> checkpoint =
        format == CheckpointFormat::Universal
            ? DeepSpeedCheckpoint::openUniversal(convertSource)
            : DeepSpeedCheckpoint::open(convertSource);
    if (!checkpoint)
      return fail(llvm::toString(checkpoint.takeError()));
    return runRetarget(**checkpoint);
  }
  llvm::Expected<std::unique_ptr<CheckpointSource>> weights =
      openCheckpoint(convertSource);
  if (!weights)
    return fail(llvm::toString(weights.takeError()));
  llvm::Expected<FreshCheckpointOptions> options = getFreshOptions(**weights);
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
      DeepSpeedCheckpoint::openFresh(**weights, *options);
  if (!checkpoint)
    return fail(llvm::toString(checkpoint.takeError()));
  return runRetarget(**checkpoint, stage);
}

int runDeepSpeedCommand() {
  if (convertCommand)
    return runConvert();
  if (inputFolder.empty())
    return fail("--input_folder is required");
  if (exportCommand)
    return runExport();
  if (outputFolder.empty())
    return fail("--output_folder is required");
  llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> checkpoint =
      fromUniversalCommand ? DeepSpeedCheckpoint::openUniversal(inputFolder)
                           : DeepSpeedCheckpoint::open(inputFolder);
  if (!checkpoint)
    return fail(llvm::toString(checkpoint.takeError()));
  if (retargetCommand || fromUniversalCommand)
    return runRetarget(**checkpoint);
  UniversalOptions options;
  options.threads = universalThreads;
  options.injectMissingState = injectMissingState;
  options.strict = !noStrict;
  options.syncOutputs = !universalNoSync;
  if (!universalQuiet)
    options.progress = printProgress;
  llvm::Expected<UniversalStats> stats =
      convertToUniversal(**checkpoint, outputFolder, options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
  for (const std::string &notice : stats->notices)
    llvm::errs() << "affine-run: notice: " << notice << "\n";
  if (!universalQuiet)
    llvm::outs() << "ds-to-universal: " << stats->parameters
                 << " parameters of a ZeRO-" << (*checkpoint)->getZeroStage()
                 << " checkpoint (TP " << (*checkpoint)->getTpDegree()
                 << " x DP " << (*checkpoint)->getDpDegree() << "), "
                 << stats->files << " files, "
                 << llvm::format("%.3f", stats->bytesWritten / 1e6)
                 << " MB of tensors in " << llvm::format("%.3f", stats->seconds)
                 << " s\n";
  return 0;
}

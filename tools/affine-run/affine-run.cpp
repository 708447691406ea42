//===- affine-run.cpp - Move tensors between layouts ----------------------===//
//
// The commands that move shard files by maps (extract, rebuild, reshard),
// init and inspect, and the dispatch to the DeepSpeed commands
// (DeepSpeedCommands.cpp). Each command's synopsis is in CommandHelp.cpp.
// Shards are safetensors files `rank_<r>.safetensors` keyed by parameter
// name; full tensors are one safetensors file. Maps are `.json` map
// documents or `.mlir` files. Reshard never builds a full tensor.
//
//===----------------------------------------------------------------------===//

#include "CheckCommand.h"
#include "CommandHelp.h"
#include "DeepSpeedCommands.h"
#include "MpiRun.h"
#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"
#include "ucp/Formats/Svg/Picture.h"
#include "ucp/Formats/Torch/TorchFile.h"
#include "ucp/Jobs/CheckpointSummary.h"
#include "ucp/Jobs/OpenCheckpoint.h"
#include "ucp/Jobs/Transfer.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/CopyProgram.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/OutputFile.h"
#include "ucp/Support/Signals.h"
#include "ucp/Support/CommandLine.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace ucp;
namespace cl = llvm::cl;

static cl::SubCommand extractCommand("extract",
                                     "cut a full-tensor file into shard files "
                                     "as a map says");
static cl::SubCommand rebuildCommand("rebuild",
                                     "assemble the full tensors from shard "
                                     "files as a map says");
static cl::SubCommand reshardCommand("reshard",
                                     "move shard files from one map to "
                                     "another without building full tensors");
static cl::SubCommand initCommand("init",
                                  "write a full-tensor file of random values "
                                  "for every parameter of a map");

static cl::SubCommand inspectCommand("inspect",
                                     "print what a torch.save (.pt) file "
                                     "holds, read without running any of it");

static cl::OptionCategory category("affine-run options");
static cl::opt<std::string> mapFile("map", cl::desc("the map (.json or .mlir)"),
                                    cl::sub(extractCommand),
                                    cl::sub(rebuildCommand),
                                    cl::sub(initCommand), cl::cat(category));
static cl::opt<std::string> sourceMapFile("source-map",
                                          cl::desc("the source map"),
                                          cl::sub(reshardCommand),
                                          cl::cat(category));
static cl::opt<std::string> targetMapFile("target-map",
                                          cl::desc("the target map"),
                                          cl::sub(reshardCommand),
                                          cl::cat(category));
static cl::opt<std::string>
    fullFile("full", cl::desc("the full-tensor safetensors file"),
             cl::sub(extractCommand), cl::cat(category));
static cl::opt<std::string> shardsDir(
    "shards", cl::desc("the folder of rank_<r>.safetensors shard files"),
    cl::sub(rebuildCommand), cl::sub(reshardCommand), cl::cat(category));
static cl::opt<std::string> outPath(
    "out",
    cl::desc("the output file (rebuild, init) or folder (extract, reshard)"),
    cl::sub(extractCommand), cl::sub(rebuildCommand), cl::sub(reshardCommand),
    cl::sub(initCommand), cl::cat(category));
static cl::opt<unsigned>
    threads("threads",
            cl::desc("worker threads (default: every core this process may run "
                     "on)"),
            cl::init(0), cl::sub(extractCommand), cl::sub(rebuildCommand),
            cl::sub(reshardCommand), cl::cat(category));
static cl::opt<std::string> device(
    "device",
    cl::desc("where copies run: cpu (default) or cuda (kernels compiled at "
             "run time with NVRTC)"),
    cl::init("cpu"), cl::sub(extractCommand), cl::sub(rebuildCommand),
    cl::sub(reshardCommand), cl::cat(category));
static cl::opt<std::string>
    state("state",
          cl::desc("what the tensors are: fp32 or param (parameters, scale "
                   "power 1), exp_avg (-1) or exp_avg_sq (-2)"),
          cl::init(""), cl::sub(extractCommand), cl::sub(rebuildCommand),
          cl::sub(reshardCommand), cl::cat(category));
static cl::opt<int>
    scalePower("scale-power",
               cl::desc("the power of the scale the tensors carry (default 1)"),
               cl::init(1), cl::sub(extractCommand), cl::sub(rebuildCommand),
               cl::sub(reshardCommand), cl::cat(category));
static cl::opt<bool> checkReplicasFlag(
    "check-replicas",
    cl::desc("compare every replicated block across all its holders (P2)"),
    cl::sub(rebuildCommand), cl::sub(reshardCommand), cl::cat(category));
static cl::opt<std::string>
    policy("policy",
           cl::desc("replica choice: lowest, local (default), node, balance"),
           cl::init("local"), cl::sub(rebuildCommand), cl::sub(reshardCommand),
           cl::cat(category));
static cl::opt<int64_t>
    ranksPerNode("ranks-per-node", cl::desc("ranks per node, for policy node"),
                 cl::init(8), cl::sub(reshardCommand), cl::cat(category));
static cl::opt<bool> ignoreExtra(
    "ignore-extra-tensors",
    cl::desc("accept tensors in the input files that no map describes, and "
             "input rank files beyond the map's ranks (they are not read)"),
    cl::sub(extractCommand), cl::sub(rebuildCommand), cl::sub(reshardCommand),
    cl::cat(category));
static cl::opt<std::string> dtypeName("dtype",
                                      cl::desc("init: the element type (f32, "
                                               "bf16, f16, f64, i32, ...; "
                                               "fp32, float32 and the other "
                                               "spellings too)"),
                                      cl::init("f32"), cl::sub(initCommand),
                                      cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("init: the random seed"),
                              cl::init(1), cl::sub(initCommand),
                              cl::cat(category));
static cl::opt<bool>
    noSync("no-sync",
           cl::desc("return without waiting for the outputs to reach the disk "
                    "(faster; a crash soon after may lose them)"),
           cl::sub(extractCommand), cl::sub(rebuildCommand),
           cl::sub(reshardCommand), cl::cat(category));
static cl::opt<std::string>
    inspectFile(cl::Positional,
                cl::desc("<file.pt | checkpoint folder | .safetensors>"),
                cl::Required, cl::sub(inspectCommand), cl::cat(category));
static cl::opt<unsigned> inspectValues(
    "values",
    cl::desc("a .pt file: also print each tensor's first N elements, in "
             "row-major order"),
    cl::value_desc("N"), cl::init(0), cl::sub(inspectCommand),
    cl::cat(category));
static cl::opt<bool> inspectJson(
    "json",
    cl::desc("a checkpoint: print the summary as JSON, for scripts"),
    cl::sub(inspectCommand), cl::cat(category));
static cl::opt<std::string> inspectRender(
    "render",
    cl::desc("a checkpoint: also draw every tensor's map, one panel each (F "
             "and every rank's shard, coloured by rank), into FILE: SVG, or "
             "PNG where the build found librsvg"),
    cl::value_desc("FILE.svg|FILE.png"), cl::sub(inspectCommand), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("print no progress or summary"),
                           cl::sub(extractCommand), cl::sub(rebuildCommand),
                           cl::sub(reshardCommand), cl::cat(category));

/// How messages start: with the process's number once a run spans several.
static std::string messagePrefix = "affine-run: ";

static int fail(const llvm::Twine &message) {
  // One write, so that the lines of processes sharing stderr do not mix.
  llvm::errs() << (messagePrefix + message + "\n").str();
  return 1;
}

/// Returns where `loc` points, for a message: "file", "file:line:col", or
/// for an op imported from a map document "file: $.params[...]".
static std::string describeLocation(mlir::Location loc) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    std::string inner = describeLocation(name.getChildLoc());
    return (inner.empty() ? "" : inner + ": ") + name.getName().str();
  }
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc)) {
    std::string text = file.getFilename().str();
    if (file.getLine() != 0)
      text += ":" + std::to_string(file.getLine()) + ":" +
              std::to_string(file.getColumn());
    return text;
  }
  return "";
}

/// Prints `diagnostic` and its notes as affine-run's own messages.
static void printDiagnostic(mlir::Diagnostic &diagnostic) {
  auto print = [](mlir::Diagnostic &d, llvm::StringRef kind) {
    std::string where = describeLocation(d.getLocation());
    llvm::errs() << "affine-run: " << (where.empty() ? "" : where + ": ")
                 << kind << d.str() << "\n";
  };
  print(diagnostic, "");
  for (mlir::Diagnostic &note : diagnostic.getNotes())
    // A note at the same place (the JSON path, which SourceMgr-style
    // printing would not show) says nothing this print has not said.
    if (note.getLocation() != diagnostic.getLocation())
      print(note, "note: ");
}

/// The maps of a run: read into one context, whose diagnostics (the
/// pipeline's, the readers') go to stderr as affine-run's messages.
class MapFiles {
public:
  MapFiles()
      : handler(&context, [](mlir::Diagnostic &diagnostic) {
          printDiagnostic(diagnostic);
          return mlir::success();
        }) {
    context.loadDialect<UCPDialect>();
    // A message names the op at fault; it need not print the op.
    context.printOpOnDiagnostic(false);
    // Planning is cheap next to copying; the copies' threads are --threads.
    context.disableMultithreading();
  }

  /// Reads the map file given as --`flag`, or fails after saying why.
  mlir::FailureOr<mlir::ModuleOp> read(llvm::StringRef path,
                                       llvm::StringRef flag) {
    if (path.empty()) {
      llvm::errs() << "affine-run: --" << flag << " is required\n";
      return mlir::failure();
    }
    mlir::OwningOpRef<mlir::ModuleOp> module = readMapModule(path, &context);
    if (!module)
      return mlir::failure();
    return keep(std::move(module));
  }

  /// The module of the full tensors of `maps`, located at `file`.
  mlir::ModuleOp getFullTensors(llvm::ArrayRef<ParamMap> maps,
                                llvm::StringRef file) {
    std::vector<ParamMap> full;
    for (const ParamMap &map : maps)
      full.push_back(getFullTensorMap(map));
    return keep(
        buildMapModule(full, mlir::FileLineColLoc::get(&context, file, 0, 0)));
  }

  mlir::MLIRContext context;

private:
  mlir::ModuleOp keep(mlir::OwningOpRef<mlir::ModuleOp> module) {
    modules.push_back(std::move(module));
    return *modules.back();
  }

  mlir::ScopedDiagnosticHandler handler;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
};

/// Returns the plain maps of every ucp.param in `module`.
static std::vector<ParamMap> getMaps(mlir::ModuleOp module) {
  std::vector<ParamMap> maps;
  module->walk([&](ParamOp param) { maps.push_back(toParamMap(param)); });
  return maps;
}

static llvm::Expected<ReplicaPolicy> getPolicy() {
  ReplicaPolicy result;
  result.ranksPerNode = ranksPerNode;
  if (std::optional<ReplicaPolicy::Kind> kind = parseReplicaPolicyKind(policy))
    result.kind = *kind;
  else
    return makeError("unknown --policy '" + policy +
                     "'; expected lowest, local, node or "
                     "balance");
  return result;
}

/// Writes random full tensors for every parameter of the map.
static int runInit() {
  MapFiles files;
  mlir::FailureOr<mlir::ModuleOp> maps = files.read(mapFile, "map");
  if (failed(maps))
    return 1;
  std::optional<DType> type = parseDTypeName(dtypeName);
  if (!type)
    return fail("unknown --dtype '" + dtypeName + "'; expected one of " +
                describeDTypeNames(kAllDTypes));
  if (outPath.empty())
    return fail("--out is required");
  if (llvm::Error error =
          writeRandomFullTensors(getMaps(*maps), outPath, *type, seed))
    return fail(llvm::toString(std::move(error)));
  return 0;
}

/// Prints " = [e0, e1, ...]", the first `count` elements of `tensor` in
/// row-major order of its view, each with the digits that round-trip it
/// (integers exactly up to 2^53).
static void printElements(const TensorData &tensor, unsigned count,
                          llvm::raw_ostream &os) {
  const char *format =
      isFloatingPoint(tensor.dtype) && getElementSize(tensor.dtype) <= 4
          ? "%.9g"
          : "%.17g";
  int64_t total = 1;
  for (int64_t extent : tensor.shape)
    total *= extent;
  int64_t shown = std::min<int64_t>(count, total);
  int64_t size = getElementSize(tensor.dtype);
  Extents index(tensor.shape.size(), 0);
  os << " = [";
  for (int64_t i = 0; i < shown; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * tensor.strides[d];
    os << (i ? ", " : "")
       << llvm::format(format,
                       readElement(tensor.dtype, tensor.data + offset * size));
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < tensor.shape[d])
        break;
      index[d] = 0;
    }
  }
  os << (shown < total ? ", ...]" : "]");
}

/// Draws the maps of every tensor of the checkpoint at `path` into
/// --render's file.
static llvm::Error renderCheckpointMaps(llvm::StringRef path) {
  std::optional<PictureFormat> format = getPictureFormat(inspectRender);
  if (!format)
    return makeError("--render " + inspectRender +
                     ": the file's name must end in .svg or .png");
  std::string pointer;
  llvm::Expected<std::unique_ptr<CheckpointSource>> source =
      openCheckpoint(followCheckpointPointer(path, pointer));
  if (!source)
    return source.takeError();
  std::vector<ParamMap> maps;
  for (const CheckpointTensor &tensor : (*source)->getTensors())
    maps.push_back(tensor.map);
  return writeOutputFile(inspectRender, [&](llvm::raw_ostream &os) {
    return writePicture(maps, {}, *format, os);
  });
}

/// Prints what the checkpoint at `path` holds and what can be done with it.
static int runInspectCheckpoint(llvm::StringRef path) {
  if (inspectValues.getNumOccurrences())
    return fail("--values: for a .pt file; " + path +
                " is a checkpoint, whose summary lists no values");
  llvm::Expected<CheckpointSummary> summary = summarizeCheckpoint(path);
  if (!summary)
    return fail(llvm::toString(summary.takeError()));
  if (!inspectRender.empty())
    if (llvm::Error error = renderCheckpointMaps(path))
      return fail(llvm::toString(std::move(error)));
  if (inspectJson)
    llvm::outs() << llvm::formatv("{0:2}", toJson(*summary)) << "\n";
  else
    printCheckpointSummary(*summary, llvm::outs());
  return 0;
}

static int runInspect() {
  if (llvm::sys::fs::is_directory(inspectFile) ||
      llvm::StringRef(inspectFile).ends_with(".safetensors"))
    return runInspectCheckpoint(inspectFile);
  if (inspectJson || !inspectRender.empty())
    return fail(std::string(inspectJson ? "--json" : "--render") +
                ": for a checkpoint folder or safetensors file; " +
                inspectFile + " is read as a torch.save file");
  llvm::Expected<std::unique_ptr<TorchFile>> file =
      TorchFile::open(inspectFile);
  if (!file)
    return fail(llvm::toString(file.takeError()));
  const PickleDocument &document = (*file)->getDocument();
  auto printTensor = [&](PickleRef tensor, llvm::raw_ostream &os) {
    if (inspectValues)
      printElements((*file)->getTensor(tensor), inspectValues, os);
  };
  printPickleTree(document, llvm::outs(), printTensor);
  size_t tensors = 0;
  std::set<std::string> storages;
  for (PickleRef ref = 0; ref < document.size(); ++ref) {
    const PickleValue &value = document.get(ref);
    tensors += value.kind == PickleValue::Tensor;
    if (value.kind == PickleValue::Storage)
      storages.insert(value.text);
  }
  llvm::outs() << tensors << " tensors in " << storages.size() << " storages";
  if (!document.getOpaqueGlobals().empty())
    llvm::outs() << "; opaque globals (not read, never run): "
                 << llvm::join(document.getOpaqueGlobals(), ", ");
  llvm::outs() << "\n";
  return 0;
}

/// Runs extract, rebuild or reshard (`command`): plans the maps through the
/// reshard pipeline, then moves the tensors; with --mpi, on the processes of
/// `mpi`.
static int runTransferCommand(const char *command, TransferOptions options,
                              MpiRun &mpi) {
  // The maps of both sides, as modules: the reshard pipeline verifies,
  // composes and lowers them before any file is opened.
  MapFiles files;
  mlir::ModuleOp sourceMaps, targetMaps;
  TransferSide source, target;
  if (extractCommand || rebuildCommand) {
    mlir::FailureOr<mlir::ModuleOp> maps = files.read(mapFile, "map");
    if (failed(maps))
      return 1;
    llvm::StringRef full = extractCommand ? fullFile : outPath;
    if (full.empty())
      return fail("--full is required");
    if (!extractCommand && shardsDir.empty())
      return fail("--shards is required");
    std::vector<ParamMap> sharded = getMaps(*maps);
    mlir::ModuleOp fullMaps = files.getFullTensors(sharded, full);
    sourceMaps = extractCommand ? fullMaps : *maps;
    targetMaps = extractCommand ? *maps : fullMaps;
    TransferSide fullSide = getFullTensorSide(sharded, full);
    TransferSide shardSide =
        getShardSide(std::move(sharded), extractCommand ? outPath : shardsDir);
    shardSide.mapOrigin = mapFile;
    fullSide.mapOrigin = "the full tensors of " + mapFile;
    source = extractCommand ? std::move(fullSide) : std::move(shardSide);
    target = extractCommand ? std::move(shardSide) : std::move(fullSide);
  } else {
    mlir::FailureOr<mlir::ModuleOp> from =
        files.read(sourceMapFile, "source-map");
    if (failed(from))
      return 1;
    mlir::FailureOr<mlir::ModuleOp> to =
        files.read(targetMapFile, "target-map");
    if (failed(to))
      return 1;
    if (shardsDir.empty())
      return fail("--shards is required");
    sourceMaps = *from;
    targetMaps = *to;
    source = getShardSide(getMaps(sourceMaps), shardsDir);
    target = getShardSide(getMaps(targetMaps), outPath);
    source.mapOrigin = sourceMapFile;
    target.mapOrigin = targetMapFile;
  }
  if (MpiRun::isRequested()) {
    llvm::Error error =
        mpi.start(source.files.size(), target.files.size(), options);
    messagePrefix =
        "affine-run: process " + std::to_string(mpi.getProcess()) + ": ";
    if (error)
      return fail(llvm::toString(std::move(error)));
  }
  // Planned from copies: the pipeline rewrites the module it runs on.
  mlir::OwningOpRef<mlir::ModuleOp> planned = sourceMaps.clone();
  mlir::FailureOr<TransferPrograms> programs =
      planTransfers(*planned, targetMaps, options.policy, options.scalePower);
  if (options.group) {
    // Every process plans the same maps; should one fail alone, all stop.
    llvm::Error planning =
        failed(programs)
            ? makeError("the maps could not be planned (see above)")
            : llvm::Error::success();
    if (llvm::Error error = options.group->agree(std::move(planning)))
      return fail(llvm::toString(std::move(error)));
  } else if (failed(programs)) {
    return 1;
  }
  llvm::Expected<TransferStats> stats =
      runTransfer(source, target, *programs, options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
  std::string across;
  if (options.group) {
    llvm::Expected<int64_t> sent = mpi.getBytesSent();
    if (!sent)
      return fail(llvm::toString(sent.takeError()));
    across = " across " + std::to_string(mpi.getProcessCount()) +
             " processes (" + llvm::formatv("{0:F3}", *sent / 1e6).str() +
             " MB between them)";
    if (mpi.getProcess() != 0)
      return 0;
  }
  if (!quiet)
    llvm::outs()
        << command << ": " << stats->parameters << " parameters, "
        << llvm::format("%.3f", stats->bytesRead / 1e6) << " MB read, "
        << llvm::format("%.3f", stats->bytesWritten / 1e6) << " MB written in "
        << llvm::format("%.3f", stats->seconds) << " s ("
        << llvm::format("%.2f", stats->seconds > 0
                                    ? stats->bytesWritten / 1e9 / stats->seconds
                                    : 0.0)
        << " GB/s)" << across
        << (stats->gpuArchitecture.empty()
                ? ""
                : ", on the GPU with kernels for " + stats->gpuArchitecture)
        << "\n";
  return 0;
}

/// The options of extract, rebuild and reshard, or why they are refused.
static llvm::Expected<TransferOptions> getOptions() {
  auto refuseOption = [](const llvm::Twine &why) {
    return makeError(why.str());
  };
  TransferOptions options;
  if (device == "cuda")
    options.device = TransferOptions::Device::Cuda;
  else if (device != "cpu")
    return refuseOption("unknown --device '" + device +
                        "'; expected cpu or cuda");
  options.threads = threads;
  options.checkReplicas = checkReplicasFlag;
  options.syncOutputs = !noSync;
  options.ignoreExtraTensors = ignoreExtra;
  options.scalePower = scalePower;
  if (!state.empty()) {
    std::optional<TensorState> named = parseStateName(state);
    if (!named)
      return refuseOption("unknown --state '" + state + "'; expected " +
                          listStateNames());
    options.scalePower = getScalePower(*named);
    // Both say what the tensors are; a disagreement is not guessed away.
    if (scalePower.getNumOccurrences() && options.scalePower != scalePower)
      return refuseOption("--state " + state + " means scale power " +
                          std::to_string(options.scalePower) +
                          ", but --scale-power " + std::to_string(scalePower) +
                          " was given; give one of them");
  }
  llvm::Expected<ReplicaPolicy> replicaPolicy = getPolicy();
  if (!replicaPolicy)
    return replicaPolicy.takeError();
  options.policy = *replicaPolicy;
  if (!quiet)
    options.progress = [](size_t done, size_t total, int64_t bytes) {
      llvm::errs() << "affine-run: " << done << "/" << total << " parameters, "
                   << llvm::format("%.1f", bytes / 1e6) << " MB written\n";
      return true;
    };

  return options;
}

int main(int argc, char **argv) {
  installSignalHandlers(argv[0]);
  llvm::InitLLVM init(argc, argv);
  MpiRun::registerOptions(reshardCommand,
                          {&ds::universalCommand, &ds::retargetCommand,
                           &ds::fromUniversalCommand, &ds::exportCommand,
                           &ds::convertCommand, &getCheckCommand()},
                          category);
  cl::HideUnrelatedOptions({&category, &getDeepSpeedCategory()});
  setVersionPrinter("affine-run");
  cl::ParseCommandLineOptions(argc, argv, getCommandOverview(argc, argv));
  if (llvm::Error error = checkOptionsGivenOnce(argc, argv))
    return fail(llvm::toString(std::move(error)));

  if (initCommand)
    return runInit();
  if (inspectCommand)
    return runInspect();
  // The jobs that divide their work under --mpi.
  if (auto *job = isCheckCommand()       ? &runCheckCommand
                  : isDeepSpeedCommand() ? &runDeepSpeedCommand
                                         : nullptr) {
    if (llvm::Error error = MpiRun::checkOptions())
      return fail(llvm::toString(std::move(error)));
    MpiRun mpi;
    return mpi.finish(job(mpi, llvm::ArrayRef<const char *>(argv, argc)));
  }
  const char *command = extractCommand   ? "extract"
                        : rebuildCommand ? "rebuild"
                        : reshardCommand ? "reshard"
                                         : nullptr;
  if (!command)
    return fail(
        "expected a command: extract, rebuild, reshard, init, "
        "inspect, ds-to-universal, ds-retarget, universal-to-ds, export or "
        "convert (see --help)");
  if (outPath.empty())
    return fail("--out is required");

  llvm::Expected<TransferOptions> options = getOptions();
  if (!options)
    return fail(llvm::toString(options.takeError()));
  if (llvm::Error error = MpiRun::checkOptions())
    return fail(llvm::toString(std::move(error)));
  MpiRun mpi;
  return mpi.finish(runTransferCommand(command, *options, mpi));
}

//===- affine-run.cpp - Move tensors between layouts ----------------------===//
//
//   affine-run extract --map M --full FILE --out DIR
//   affine-run rebuild --map M --shards DIR --out FILE
//   affine-run reshard --source-map Ms --target-map Mt --shards DIR --out DIR2
//   affine-run init    --map M --out FILE [--dtype f32] [--seed 1]
//
// Shards are safetensors files `rank_<r>.safetensors` keyed by parameter
// name; full tensors are one safetensors file. Maps are `.json` map
// documents or `.mlir` files. Reshard never builds a full tensor.
//
//===----------------------------------------------------------------------===//

#include "ucp/IO/MapTranslation.h"
#include "ucp/Run/Signals.h"
#include "ucp/Run/Transfer.h"
#include "ucp/Runtime/CopyProgram.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

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
          cl::desc("what the tensors are: fp32 (parameters, scale power 1), "
                   "exp_avg (-1) or exp_avg_sq (-2)"),
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
                                               "bf16, f16, f64, i32, ...)"),
                                      cl::init("f32"), cl::sub(initCommand),
                                      cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("init: the random seed"),
                              cl::init(1), cl::sub(initCommand),
                              cl::cat(category));
static cl::opt<bool> noSync(
    "no-sync",
    cl::desc("return without waiting for the outputs to reach the disk "
             "(faster; a crash soon after may lose them)"),
    cl::sub(extractCommand), cl::sub(rebuildCommand), cl::sub(reshardCommand),
    cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("print no progress or summary"),
                           cl::sub(extractCommand), cl::sub(rebuildCommand),
                           cl::sub(reshardCommand), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "affine-run: " << message << "\n";
  return 1;
}

static llvm::Expected<std::vector<ParamMap>> readMaps(llvm::StringRef path,
                                                      llvm::StringRef flag) {
  if (path.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--" + flag.str() + " is required");
  mlir::MLIRContext context;
  return readMapFile(path, &context);
}

static llvm::Expected<ReplicaPolicy> getPolicy() {
  ReplicaPolicy result;
  result.ranksPerNode = ranksPerNode;
  if (policy == "lowest")
    result.kind = ReplicaPolicy::Lowest;
  else if (policy == "local")
    result.kind = ReplicaPolicy::Local;
  else if (policy == "node")
    result.kind = ReplicaPolicy::Node;
  else if (policy == "balance")
    result.kind = ReplicaPolicy::Balance;
  else
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "unknown --policy '" + policy +
                                       "'; expected lowest, local, node or "
                                       "balance");
  return result;
}

/// Writes random full tensors for every parameter of the map.
static int runInit() {
  llvm::Expected<std::vector<ParamMap>> maps = readMaps(mapFile, "map");
  if (!maps)
    return fail(llvm::toString(maps.takeError()));
  std::optional<DType> type = parseDTypeName(dtypeName);
  if (!type)
    return fail("unknown --dtype '" + dtypeName + "'");
  if (outPath.empty())
    return fail("--out is required");
  if (llvm::Error error = writeRandomFullTensors(*maps, outPath, *type, seed))
    return fail(llvm::toString(std::move(error)));
  return 0;
}

int main(int argc, char **argv) {
  installSignalHandlers(argv[0]);
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "affine-run: move tensors between sharded layouts described by ucp "
      "maps\n\n"
      "  affine-run extract --map M --full FILE --out DIR\n"
      "  affine-run rebuild --map M --shards DIR --out FILE\n"
      "  affine-run reshard --source-map Ms --target-map Mt --shards DIR "
      "--out DIR2\n"
      "  affine-run init --map M --out FILE [--dtype f32] [--seed 1]\n\n"
      "Shards are DIR/rank_<r>.safetensors, keyed by parameter name. Nothing "
      "is written unless the whole run succeeds; extract, rebuild and reshard "
      "return once their outputs are on disk (unless --no-sync).\n");

  if (initCommand)
    return runInit();
  const char *command = extractCommand   ? "extract"
                        : rebuildCommand ? "rebuild"
                        : reshardCommand ? "reshard"
                                         : nullptr;
  if (!command)
    return fail("expected a command: extract, rebuild, reshard or init "
                "(see --help)");
  if (outPath.empty())
    return fail("--out is required");

  TransferOptions options;
  if (device == "cuda")
    options.device = TransferOptions::Device::Cuda;
  else if (device != "cpu")
    return fail("unknown --device '" + device + "'; expected cpu or cuda");
  options.threads = threads;
  options.checkReplicas = checkReplicasFlag;
  options.syncOutputs = !noSync;
  options.ignoreExtraTensors = ignoreExtra;
  options.scalePower = scalePower;
  if (!state.empty()) {
    if (state == "fp32")
      options.scalePower = 1;
    else if (state == "exp_avg")
      options.scalePower = -1;
    else if (state == "exp_avg_sq")
      options.scalePower = -2;
    else
      return fail("unknown --state '" + state +
                  "'; expected fp32, exp_avg or exp_avg_sq");
    // Both say what the tensors are; a disagreement is not guessed away.
    if (scalePower.getNumOccurrences() && options.scalePower != scalePower)
      return fail("--state " + state + " means scale power " +
                  std::to_string(options.scalePower) + ", but --scale-power " +
                  std::to_string(scalePower) + " was given; give one of them");
  }
  llvm::Expected<ReplicaPolicy> replicaPolicy = getPolicy();
  if (!replicaPolicy)
    return fail(llvm::toString(replicaPolicy.takeError()));
  options.policy = *replicaPolicy;
  if (!quiet)
    options.progress = [](size_t done, size_t total, int64_t bytes) {
      llvm::errs() << "affine-run: " << done << "/" << total << " parameters, "
                   << llvm::format("%.1f", bytes / 1e6) << " MB written\n";
    };

  TransferSide source, target;
  if (extractCommand) {
    llvm::Expected<std::vector<ParamMap>> maps = readMaps(mapFile, "map");
    if (!maps)
      return fail(llvm::toString(maps.takeError()));
    if (fullFile.empty())
      return fail("--full is required");
    source = getFullTensorSide(*maps, fullFile);
    target = getShardSide(std::move(*maps), outPath);
  } else if (rebuildCommand) {
    llvm::Expected<std::vector<ParamMap>> maps = readMaps(mapFile, "map");
    if (!maps)
      return fail(llvm::toString(maps.takeError()));
    if (shardsDir.empty())
      return fail("--shards is required");
    target = getFullTensorSide(*maps, outPath);
    source = getShardSide(std::move(*maps), shardsDir);
  } else {
    llvm::Expected<std::vector<ParamMap>> from =
        readMaps(sourceMapFile, "source-map");
    if (!from)
      return fail(llvm::toString(from.takeError()));
    llvm::Expected<std::vector<ParamMap>> to =
        readMaps(targetMapFile, "target-map");
    if (!to)
      return fail(llvm::toString(to.takeError()));
    if (shardsDir.empty())
      return fail("--shards is required");
    source = getShardSide(std::move(*from), shardsDir);
    target = getShardSide(std::move(*to), outPath);
  }
  llvm::Expected<TransferStats> stats = runTransfer(source, target, options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
  if (!quiet)
    llvm::outs()
        << command << ": " << stats->parameters << " parameters, "
        << llvm::format("%.3f", stats->bytesRead / 1e6) << " MB read, "
        << llvm::format("%.3f", stats->bytesWritten / 1e6) << " MB written in "
        << llvm::format("%.3f", stats->seconds) << " s ("
        << llvm::format("%.2f", stats->seconds > 0
                                    ? stats->bytesWritten / 1e9 / stats->seconds
                                    : 0.0)
        << " GB/s)"
        << (stats->gpuArchitecture.empty()
                ? ""
                : ", on the GPU with kernels for " + stats->gpuArchitecture)
        << "\n";
  return 0;
}

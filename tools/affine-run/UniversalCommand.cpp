//===- UniversalCommand.cpp - affine-run ds-to-universal ------------------===//
//
//   affine-run ds-to-universal --input_folder CKPT/TAG --output_folder OUT
//       [--inject_missing_state] [--no_strict] [--threads N] [--no-sync]
//
// The options are spelt as DeepSpeed's ds_to_universal.py spells them, so
// that the command drops into scripts written for it.
//
//===----------------------------------------------------------------------===//

#include "UniversalCommand.h"
#include "ucp/Universal/UniversalConversion.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace ucp;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &getUniversalCategory() {
  static cl::OptionCategory category("ds-to-universal options");
  return category;
}

static cl::SubCommand
    universalCommand("ds-to-universal",
                     "convert a DeepSpeed ZeRO checkpoint to a Universal "
                     "checkpoint, as DeepSpeed's ds_to_universal.py does");
static cl::opt<std::string>
    inputFolder("input_folder",
                cl::desc("the checkpoint folder, CKPT/TAG (the folder of "
                         "*_model_states.pt and *_optim_states.pt files)"),
                cl::value_desc("folder"), cl::sub(universalCommand),
                cl::cat(getUniversalCategory()));
static cl::opt<std::string> outputFolder(
    "output_folder",
    cl::desc("the new folder of the Universal checkpoint; latest_universal "
             "beside it is set to its name"),
    cl::value_desc("folder"), cl::sub(universalCommand),
    cl::cat(getUniversalCategory()));
static cl::opt<bool> injectMissingState(
    "inject_missing_state",
    cl::desc("convert a ZeRO-1/2 checkpoint without universal_checkpoint_info "
             "as one without tensor parallelism"),
    cl::sub(universalCommand), cl::cat(getUniversalCategory()));
static cl::opt<bool>
    noStrict("no_strict",
             cl::desc("accept universal_checkpoint_info patterns that match no "
                      "parameter"),
             cl::sub(universalCommand), cl::cat(getUniversalCategory()));
static cl::opt<unsigned> universalThreads(
    "threads",
    cl::desc("worker threads (default: every core this process may run on)"),
    cl::init(0), cl::sub(universalCommand), cl::cat(getUniversalCategory()));
static cl::opt<bool> universalNoSync(
    "no-sync",
    cl::desc("return without waiting for the outputs to reach the disk"),
    cl::sub(universalCommand), cl::cat(getUniversalCategory()));
static cl::opt<bool> universalQuiet("quiet",
                                    cl::desc("print no progress or summary"),
                                    cl::sub(universalCommand),
                                    cl::cat(getUniversalCategory()));

bool isUniversalCommand() { return static_cast<bool>(universalCommand); }

int runUniversalCommand() {
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "affine-run: " << message << "\n";
    return 1;
  };
  if (inputFolder.empty())
    return fail("--input_folder is required");
  if (outputFolder.empty())
    return fail("--output_folder is required");
  llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> checkpoint =
      DeepSpeedCheckpoint::open(inputFolder);
  if (!checkpoint)
    return fail(llvm::toString(checkpoint.takeError()));
  UniversalOptions options;
  options.threads = universalThreads;
  options.injectMissingState = injectMissingState;
  options.strict = !noStrict;
  options.syncOutputs = !universalNoSync;
  if (!universalQuiet)
    options.progress = [](size_t done, size_t total, int64_t bytes) {
      llvm::errs() << "affine-run: " << done << "/" << total << " files, "
                   << llvm::format("%.1f", bytes / 1e6)
                   << " MB of tensors written\n";
    };
  llvm::Expected<UniversalStats> stats =
      convertToUniversal(**checkpoint, outputFolder, options);
  if (!stats)
    return fail(llvm::toString(stats.takeError()));
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

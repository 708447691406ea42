//===- CheckCommand.cpp - affine-run check --------------------------------===//
//
// Proves a checkpoint sound before anyone trains on it (ucp/Jobs/Check.h):
// prints every finding and a summary line, or the report as JSON; exits 0
// when nothing fatal was found, 1 otherwise.
//
//===----------------------------------------------------------------------===//

#include "CheckCommand.h"
#include "MpiRun.h"
#include "ucp/Engine/GroupProgress.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Jobs/Check.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace cl = llvm::cl;
using namespace ucp;

static cl::SubCommand checkCommand(
    "check", "prove a checkpoint sound before training on it: its maps, "
             "replicas, values and files, each finding named");
static cl::OptionCategory checkCategory("check options");
static cl::opt<std::string>
    checkPath(cl::Positional,
              cl::desc("<a DeepSpeed tag folder or its parent with latest, a "
                       "Universal folder, a safetensors file or folder>"),
              cl::Required, cl::sub(checkCommand), cl::cat(checkCategory));
static cl::opt<bool> checkJson("json",
                               cl::desc("print the report as JSON"),
                               cl::sub(checkCommand), cl::cat(checkCategory));
static cl::opt<bool> nonFiniteWeightsFatal(
    "nonfinite-weights-fatal",
    cl::desc("make NaN or Inf in a weight (not a master or moment) a fatal "
             "finding; by default it is reported and the check still passes"),
    cl::sub(checkCommand), cl::cat(checkCategory));
static cl::opt<unsigned> checkThreads(
    "threads",
    cl::desc("worker threads (default: every core this process may run on)"),
    cl::sub(checkCommand), cl::cat(checkCategory));
static cl::opt<bool> checkQuiet("quiet", cl::desc("print no progress"),
                                cl::sub(checkCommand), cl::cat(checkCategory));

cl::SubCommand &getCheckCommand() { return checkCommand; }

bool isCheckCommand() { return static_cast<bool>(checkCommand); }

int runCheckCommand(MpiRun &mpi, llvm::ArrayRef<const char *> arguments) {
  llvm::parallel::strategy = llvm::hardware_concurrency(checkThreads);
  CheckOptions options;
  options.nonFiniteWeightsFatal = nonFiniteWeightsFatal;
  std::string path = checkPath;
  if (MpiRun::isRequested()) {
    llvm::Expected<ProcessGroup *> group =
        mpi.startJob(checkThreads, arguments, checkPath);
    llvm::Error error = group ? llvm::Error::success() : group.takeError();
    if (!error && MpiRun::isNodeLocal()) {
      // Each process checks its share in a local folder that looks
      // whole; the report names the folder given.
      llvm::Expected<std::string> local =
          mpi.openNodeLocal(checkPath, options.supplyInput);
      error = local ? llvm::Error::success() : local.takeError();
      path = local ? *local : path;
      options.getFileHolder = [&mpi](llvm::StringRef file) {
        return mpi.getInputHolder(file);
      };
      options.shownPath = checkPath;
    }
    if (error) {
      llvm::errs() << ("affine-run: process " +
                       std::to_string(mpi.getProcess()) + ": " +
                       llvm::toString(std::move(error)) + "\n");
      return 1;
    }
    options.group = *group;
  }
  // Process 0 speaks for the group, with the group's totals.
  bool reports = mpi.getProcess() == 0;
  auto last = std::chrono::steady_clock::now();
  ProgressFunction print = [&](size_t done, size_t total, int64_t bytes) {
    auto now = std::chrono::steady_clock::now();
    if (done == total || now - last >= std::chrono::seconds(1)) {
      last = now;
      llvm::errs() << "affine-run: check: " << done << "/" << total
                   << " tensors and files, "
                   << llvm::format("%.1f", bytes / 1e6) << " MB read\n";
    }
    return true;
  };
  GroupProgress progress(options.group, checkQuiet ? nullptr : print);
  options.progress = progress.getFunction();
  CheckReport report = checkCheckpoint(path, options);
  progress.finish();
  if (reports && checkJson) {
    llvm::outs() << llvm::formatv("{0:2}", toJson(report)) << "\n";
  } else if (reports) {
    for (const CheckFinding &finding : report.findings)
      llvm::outs() << (finding.fatal ? "finding: " : "note: ")
                   << finding.message << "\n";
    llvm::outs() << (report.isSound() ? "sound: " : "not sound: ")
                 << report.path << ": " << report.summary << "\n";
  }
  return report.isSound() ? 0 : 1;
}

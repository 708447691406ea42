//===- MpiRun.cpp - affine-run's jobs under --mpi -------------------------===//

#include "MpiRun.h"

#ifdef UCP_HAS_MPI
#include "ucp/Distributed/MpiTransfer.h"
#include "ucp/Distributed/NodeLocalFolder.h"
#include "ucp/Engine/GroupFingerprint.h"
#include "ucp/Formats/Torch/TorchArchive.h"
#include "ucp/Jobs/OpenCheckpoint.h"
#endif
#include "ucp/Support/Error.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace ucp;
namespace cl = llvm::cl;

namespace {

/// Adds an option to every subcommand of a list (cl::sub takes one, or a
/// group made from a fixed list).
struct subs {
  llvm::ArrayRef<cl::SubCommand *> commands;
  template <class Option> void apply(Option &option) const {
    for (cl::SubCommand *command : commands)
      option.addSubCommand(*command);
  }
};

/// The jobs among `jobs` that read a node-local input: those that name
/// the bytes they read (ds-to-universal, ds-retarget, universal-to-ds,
/// export, check).
std::vector<cl::SubCommand *>
getNodeLocalCommands(llvm::ArrayRef<cl::SubCommand *> jobs) {
  std::vector<cl::SubCommand *> found;
  for (cl::SubCommand *job : jobs)
    if (llvm::is_contained({"ds-to-universal", "ds-retarget", "export",
                            "universal-to-ds", "check"},
                           job->getName()))
      found.push_back(job);
  return found;
}

/// The options of --mpi, made when the commands register them.
struct MpiOptions {
  MpiOptions(cl::SubCommand &command, llvm::ArrayRef<cl::SubCommand *> all,
             cl::OptionCategory &category)
      : mpi("mpi",
            cl::desc("run across the processes of MPI (start affine-run "
                     "under mpirun). reshard: each process reads the source "
                     "rank files and writes the target rank files it holds. "
                     "ds-to-universal, ds-retarget, universal-to-ds, export, "
                     "convert, check: every process reads the checkpoint "
                     "(storage that all can read) and writes the output "
                     "files (checks the tensors and files) given to it, "
                     "divided by bytes; one commit (report) for all"),
            subs{all}, cl::cat(category)),
        sourceProcesses(
            "source-processes",
            cl::desc("with --mpi: the process holding each source rank, "
                     "comma-separated (default: rank r on process r % N)"),
            cl::value_desc("p0,p1,..."), cl::sub(command), cl::cat(category)),
        targetProcesses(
            "target-processes",
            cl::desc("with --mpi: the process holding each target rank"),
            cl::value_desc("p0,p1,..."), cl::sub(command), cl::cat(category)),
        timeout("mpi-timeout",
                cl::desc("with --mpi: fail when another process is silent "
                         "this long (longer than any one step takes: a "
                         "batch, or writing a process's outputs to disk)"),
                cl::value_desc("seconds"), cl::init(300), subs{all},
                cl::cat(category)),
        batchMegabytes(
            "mpi-batch-mb",
            cl::desc("with --mpi: target megabytes moved per exchange (what "
                     "message buffers hold at once)"),
            cl::value_desc("MB"), cl::init(256), cl::sub(command),
            cl::cat(category)),
        nodeLocal(
            "node-local",
            cl::desc("with --mpi: each process holds only some files of "
                     "the input (its node's own disk, at the same path or "
                     "each at its own); the bytes a process reads of files "
                     "it lacks come from the process holding them"),
            subs{getNodeLocalCommands(all)}, cl::cat(category)),
        fault("mpi-inject-fault",
              cl::desc("for tests: PROCESS:STEP:kill|hang (a step is a "
                       "reshard's exchange batch, another job's output file)"),
              cl::Hidden, subs{all}, cl::cat(category)) {}

  cl::opt<bool> mpi;
  cl::opt<std::string> sourceProcesses, targetProcesses;
  cl::opt<double> timeout;
  cl::opt<double> batchMegabytes;
  cl::opt<bool> nodeLocal;
  cl::opt<std::string> fault;
};

std::unique_ptr<MpiOptions> &getOptions() {
  static std::unique_ptr<MpiOptions> options;
  return options;
}

} // namespace

void MpiRun::registerOptions(cl::SubCommand &reshard,
                             llvm::ArrayRef<cl::SubCommand *> jobs,
                             cl::OptionCategory &category) {
  std::vector<cl::SubCommand *> all = {&reshard};
  all.insert(all.end(), jobs.begin(), jobs.end());
  getOptions() = std::make_unique<MpiOptions>(reshard, all, category);
}

bool MpiRun::isRequested() { return getOptions() && getOptions()->mpi; }

bool MpiRun::isNodeLocal() { return isRequested() && getOptions()->nodeLocal; }

llvm::Error MpiRun::checkOptions() {
  MpiOptions *flags = getOptions().get();
  if (!flags || flags->mpi)
    return llvm::Error::success();
  for (cl::Option *option : std::initializer_list<cl::Option *>{
           &flags->sourceProcesses, &flags->targetProcesses, &flags->timeout,
           &flags->batchMegabytes, &flags->nodeLocal, &flags->fault})
    if (option->getNumOccurrences())
      return makeError("--" + option->ArgStr + " needs --mpi");
  return llvm::Error::success();
}

#ifdef UCP_HAS_MPI

struct MpiRun::State {
  bool started = false;
  std::unique_ptr<MpiGroup> group;
  std::unique_ptr<NodeLocalFolder> input;
};

MpiRun::MpiRun() : state(std::make_unique<State>()) {}
MpiRun::~MpiRun() = default;

/// The name within `local`'s folder of the file at `path` of it.
static std::optional<llvm::StringRef>
getNameWithin(const NodeLocalFolder &local, llvm::StringRef path) {
  if (!path.consume_front(local.getPath()) || !path.consume_front("/"))
    return std::nullopt;
  return path;
}

/// Parses --mpi-inject-fault.
static llvm::Expected<InjectedFault> parseFault(llvm::StringRef text) {
  InjectedFault fault;
  if (text.empty())
    return fault;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ':');
  if (parts.size() != 3 || parts[0].getAsInteger(10, fault.process) ||
      parts[1].getAsInteger(10, fault.batch) ||
      (parts[2] != "kill" && parts[2] != "hang"))
    return makeError("--mpi-inject-fault '" + text +
                     "': expected PROCESS:BATCH:kill|hang");
  fault.kind = parts[2] == "kill" ? InjectedFault::Kill : InjectedFault::Hang;
  return fault;
}

llvm::Error MpiRun::start(int64_t sourceWorld, int64_t targetWorld,
                          TransferOptions &options) {
  int provided = 0;
  // Only the main thread calls MPI; the executor's threads only copy.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  state->started = true;
  MpiOptions &flags = *getOptions();
  int processes = getProcessCount();
  ProcessOwnership ownership =
      getRoundRobinOwnership(sourceWorld, targetWorld, processes);
  for (auto [text, world, side, list] :
       {std::make_tuple(&flags.sourceProcesses, sourceWorld, "source",
                        &ownership.sourceProcesses),
        std::make_tuple(&flags.targetProcesses, targetWorld, "target",
                        &ownership.targetProcesses)}) {
    if (text->empty())
      continue;
    llvm::Expected<std::vector<int64_t>> parsed =
        parseProcessList(*text, world, processes, side);
    if (!parsed)
      return parsed.takeError();
    *list = std::move(*parsed);
  }
  MpiGroupOptions groupOptions;
  groupOptions.timeoutSeconds = flags.timeout;
  groupOptions.threads = options.threads;
  // Checked as a number before it becomes bytes: NaN fails the comparison,
  // and a petabyte bounds the conversion.
  if (!(flags.batchMegabytes > 0 && flags.batchMegabytes <= 1e9))
    return makeError("--mpi-batch-mb: expected a positive number of megabytes "
                     "up to 1e9");
  groupOptions.batchBytes =
      std::max<int64_t>(1, static_cast<int64_t>(flags.batchMegabytes * 1e6));
  llvm::Expected<InjectedFault> fault = parseFault(flags.fault);
  if (!fault)
    return fault.takeError();
  groupOptions.fault = *fault;
  options.policy.sourceProcesses = ownership.sourceProcesses;
  options.policy.targetProcesses = ownership.targetProcesses;
  llvm::Expected<std::unique_ptr<MpiGroup>> group =
      MpiGroup::create(MPI_COMM_WORLD, std::move(ownership), groupOptions);
  if (!group)
    return group.takeError();
  state->group = std::move(*group);
  options.group = state->group.get();
  if (getProcess() != 0)
    options.progress = nullptr;
  return llvm::Error::success();
}

llvm::Expected<ProcessGroup *>
MpiRun::startJob(unsigned threads, llvm::ArrayRef<const char *> arguments,
                 llvm::StringRef input) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  state->started = true;
  MpiOptions &flags = *getOptions();
  MpiGroupOptions groupOptions;
  groupOptions.timeoutSeconds = flags.timeout;
  groupOptions.threads = threads;
  groupOptions.singleCopy = false; // No bytes travel between processes.
  llvm::Expected<InjectedFault> fault = parseFault(flags.fault);
  if (!fault)
    return fault.takeError();
  groupOptions.fault = *fault;
  llvm::Expected<std::unique_ptr<MpiGroup>> group =
      MpiGroup::create(MPI_COMM_WORLD, {}, groupOptions);
  if (!group)
    return group.takeError();
  state->group = std::move(*group);
  GroupFingerprint given;
  given.addValue("the number of arguments", std::to_string(arguments.size()));
  for (auto [i, argument] : llvm::enumerate(arguments)) {
    llvm::StringRef text = argument;
    if (flags.nodeLocal && !input.empty() &&
        (text == input || text.ends_with("=" + input.str())))
      text = "(this process's input folder)";
    given.addValue("argument " + std::to_string(i), text);
  }
  if (llvm::Error error = agreeOnFingerprint(*state->group, given))
    return std::move(error);
  return state->group.get();
}

llvm::Expected<std::string> MpiRun::openNodeLocal(llvm::StringRef input,
                                                  InputSupply &supply) {
  // What a replica leaves out is a torch.save archive's large records,
  // which only the DeepSpeed and Universal readers name before they read
  // them. Each process sees some files: a folder any of them sees as
  // safetensors is refused on all, before anything is sent.
  CheckpointFormat format = detectCheckpointFormat(input);
  std::vector<int64_t> seen = {format == CheckpointFormat::Safetensors};
  if (llvm::Error error =
          state->group->reduce(seen, ProcessGroup::Reduction::Max))
    return std::move(error);
  if (seen[0])
    return makeError("--node-local: '" + input +
                     "' is neither a DeepSpeed nor a Universal checkpoint "
                     "folder; only those are read node-local");
  MpiGroupOptions options;
  options.timeoutSeconds = getOptions()->timeout;
  llvm::Expected<std::unique_ptr<NodeLocalFolder>> folder =
      NodeLocalFolder::open(
          MPI_COMM_WORLD, input, options, [](const llvm::MemoryBuffer &file) {
            return getStoragePayloads(file, kReplicaHoleBytes);
          });
  if (!folder)
    return folder.takeError();
  state->input = std::move(*folder);
  NodeLocalFolder &local = *state->input;
  state->group->showFolderAs(local.getPath(), input);
  supply = [&local](std::vector<FileBytes> reads) -> llvm::Error {
    std::vector<FileRange> ranges;
    // A path outside the local folder goes as it is: fill refuses it on
    // every process at once, rather than leaving the others waiting.
    for (FileBytes &read : reads)
      ranges.push_back(
          {getNameWithin(local, read.path).value_or(read.path).str(),
           read.offset, read.bytes});
    return local.fill(ranges);
  };
  return local.getPath().str();
}

int MpiRun::getInputHolder(llvm::StringRef path) const {
  std::optional<llvm::StringRef> name =
      state->input ? getNameWithin(*state->input, path) : std::nullopt;
  return name ? state->input->getHolder(*name) : -1;
}

int MpiRun::getProcess() const {
  int process = 0;
  if (state->started)
    MPI_Comm_rank(MPI_COMM_WORLD, &process);
  return process;
}

int MpiRun::getProcessCount() const {
  int count = 1;
  if (state->started)
    MPI_Comm_size(MPI_COMM_WORLD, &count);
  return count;
}

llvm::Expected<int64_t> MpiRun::getBytesSent() {
  std::vector<int64_t> bytes = {state->group->getBytesSent()};
  if (llvm::Error error =
          state->group->reduce(bytes, ProcessGroup::Reduction::Sum))
    return std::move(error);
  return bytes[0];
}

llvm::Expected<int64_t> MpiRun::getInputBytesReceived() {
  std::vector<int64_t> bytes = {state->input ? state->input->getBytesReceived()
                                             : 0};
  if (llvm::Error error =
          state->group->reduce(bytes, ProcessGroup::Reduction::Sum))
    return std::move(error);
  return bytes[0];
}

int MpiRun::finish(int code) {
  if (!state->started)
    return code;
  // The node-local input's folder goes whatever the outcome (before an
  // abort, which ends this process).
  if (state->input)
    state->input->removeLocalFolder();
  // Every failure but a broken group's is one all processes share (they
  // agreed on it, or met it parsing the same options); after a timeout a
  // peer may never answer again.
  if (code != 0 && state->group && state->group->isBroken()) {
    llvm::errs().flush();
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  state->input.reset();
  state->group.reset();
  MPI_Finalize();
  return code;
}

#else

struct MpiRun::State {};
MpiRun::MpiRun() = default;
MpiRun::~MpiRun() = default;
static llvm::Error refuseMpi() {
  return makeError("--mpi: this affine-run was built without MPI (install "
                   "libopenmpi-dev and configure again)");
}
llvm::Error MpiRun::start(int64_t, int64_t, TransferOptions &) {
  return refuseMpi();
}
llvm::Expected<ProcessGroup *>
MpiRun::startJob(unsigned, llvm::ArrayRef<const char *>, llvm::StringRef) {
  return refuseMpi();
}
llvm::Expected<std::string> MpiRun::openNodeLocal(llvm::StringRef,
                                                  InputSupply &) {
  return refuseMpi();
}
int MpiRun::getInputHolder(llvm::StringRef) const { return -1; }

int MpiRun::getProcess() const { return 0; }
int MpiRun::getProcessCount() const { return 1; }
llvm::Expected<int64_t> MpiRun::getBytesSent() { return 0; }
llvm::Expected<int64_t> MpiRun::getInputBytesReceived() { return 0; }
int MpiRun::finish(int code) { return code; }

#endif

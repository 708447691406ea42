//===- MpiRun.h - affine-run's jobs under --mpi -----------------*- C++ -*-===//
//
// The MPI side of affine-run: its options, starting and ending MPI, and the
// process group a job runs on: a reshard's, whose processes hold ranks,
// or that of a job dividing its outputs (ucp/Engine/GroupOutputs.h). Built
// without MPI, --mpi is refused.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TOOLS_AFFINE_RUN_MPIRUN_H
#define UCP_TOOLS_AFFINE_RUN_MPIRUN_H

#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Jobs/Transfer.h"

#include "llvm/Support/CommandLine.h"

#include <memory>

namespace ucp {

/// One run of affine-run across the processes of MPI_COMM_WORLD.
class MpiRun {
public:
  /// Adds --mpi and its options to `reshard`, and --mpi, --mpi-timeout
  /// and the fault of tests to each of `jobs`; call before parsing.
  static void registerOptions(llvm::cl::SubCommand &reshard,
                              llvm::ArrayRef<llvm::cl::SubCommand *> jobs,
                              llvm::cl::OptionCategory &category);
  /// Whether --mpi was given.
  static bool isRequested();
  /// Whether --node-local was given (with --mpi).
  static bool isNodeLocal();
  /// Refuses the options of --mpi given without it.
  static llvm::Error checkOptions();

  MpiRun();
  ~MpiRun();

  /// Starts MPI and the group holding `sourceWorld` and `targetWorld` ranks
  /// as the options say, and sets `options` (group, processes of the
  /// replica policy, progress on process 0 only) to run on it.
  llvm::Error start(int64_t sourceWorld, int64_t targetWorld,
                    TransferOptions &options);
  /// Starts MPI and the group of a job that divides its outputs among the
  /// processes (every process reads every input), with `threads` threads
  /// each; then, collectively, fails on every process unless all were
  /// given the same `arguments` (the command line), naming the first
  /// that differs. Under --node-local each process's `input` folder is its
  /// own, so that argument may differ.
  llvm::Expected<ProcessGroup *>
  startJob(unsigned threads, llvm::ArrayRef<const char *> arguments,
           llvm::StringRef input);
  /// Under --node-local, collective: makes the job's input folder `input`,
  /// of which each process holds some files, whole on every process (a
  /// NodeLocalFolder, kept until finish), and returns the local folder to
  /// open instead; `supply` is then what brings the bytes a process reads.
  /// The group's messages name `input` where they name the local folder.
  llvm::Expected<std::string> openNodeLocal(llvm::StringRef input,
                                            InputSupply &supply);
  /// After openNodeLocal: the process holding the file at `path` of the
  /// local folder (-1 for a path outside it).
  int getInputHolder(llvm::StringRef path) const;
  /// This process's number (0 before start).
  int getProcess() const;
  int getProcessCount() const;
  /// Collective: the bytes all processes sent to others so far.
  llvm::Expected<int64_t> getBytesSent();
  /// Collective, after openNodeLocal: the bytes of the input all processes
  /// received from others.
  llvm::Expected<int64_t> getInputBytesReceived();
  /// Ends MPI and returns `code`: MPI is finalized when the processes can
  /// still agree, else aborted so that none waits for a dead peer.
  int finish(int code);

private:
  struct State;
  std::unique_ptr<State> state;
};

} // namespace ucp

#endif // UCP_TOOLS_AFFINE_RUN_MPIRUN_H

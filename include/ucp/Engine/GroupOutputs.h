//===- GroupOutputs.h - One job's outputs written by many processes -*- C++
//-*-===//
//
// A job across processes in the shared storage model: every process can
// read every input file, opens the checkpoint and plans the whole job as
// a single process would, then writes only the outputs given to it. The
// outputs are divided by bytes (largest first, each to the process with
// the fewest bytes so far), so no tensor byte travels between processes.
//
// The group's rules hold as for a transfer (ProcessGroup.h): before any
// output exists, the processes agree on a fingerprint of the whole plan
// (its outputs, their sizes and owners, and what the job adds); the
// outputs are written into one staged folder that process 0 makes; each
// process flushes what it wrote and the processes agree on the outcome;
// only then does process 0 rename the folder into place and write the
// pointer file, and every process learns whether that succeeded. A
// failure anywhere (a process that dies or hangs included, through the
// group's bounded waits) leaves nothing under the output's name.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_GROUPOUTPUTS_H
#define UCP_ENGINE_GROUPOUTPUTS_H

#include "ucp/Engine/GroupFingerprint.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace ucp {

class ProcessGroup;

/// The process each output goes to, given each output's bytes: largest
/// first, to the process with the fewest bytes so far (ties: the lower
/// output, the lower process), so that every process computes the same.
/// An output `pinned` gives a process (not -1) goes to it, its bytes
/// counted there before the rest is divided.
std::vector<int> divideByBytes(llvm::ArrayRef<int64_t> bytes, int processes,
                               llvm::ArrayRef<int> pinned = {});

/// A job's outputs, in the order the job writes them, and who writes each.
class OutputShare {
public:
  /// Adds an output named `name` of about `bytes` bytes; returns its index.
  /// `pinned`: the process that must write it (one that alone can, as
  /// the holder of a node-local file), or -1 to divide it by bytes.
  size_t add(llvm::StringRef name, int64_t bytes, int pinned = -1);
  /// Divides the outputs over `group`'s processes (all to this process
  /// without a group).
  void divide(const ProcessGroup *group);
  /// Whether this process writes output `index`.
  bool isMine(size_t index) const;
  /// How many outputs this process writes.
  size_t countMine() const;
  /// Adds every output, its bytes and its process to `fingerprint`.
  void addTo(GroupFingerprint &fingerprint) const;

private:
  std::vector<std::string> names;
  std::vector<int64_t> bytes;
  std::vector<int> pinned;
  std::vector<int> owners;
  int process = 0;
};

/// The single-process way a job commits a folder: makes the staged folder,
/// calls the `write` it is given with its path, and renames it into place
/// (writeCheckpointFolder, or an OutputFolder of its own).
using FolderCommitter = llvm::function_ref<llvm::Error(
    llvm::function_ref<llvm::Error(llvm::StringRef staged)> write)>;

/// Writes the folder `folder` with `commit` alone without `group`; with
/// one, as the file comment says: every process agrees on `plan`, process
/// 0 runs `commit`, and `write` runs on every process in the folder it
/// staged (messages name `folder`, not the staged folder). `durable`:
/// every process waits until what it wrote is on disk before the group
/// agrees to commit.
llvm::Error
writeFolderTogether(ProcessGroup *group, llvm::StringRef folder,
                    const GroupFingerprint &plan, FolderCommitter commit,
                    llvm::function_ref<llvm::Error(llvm::StringRef)> write,
                    bool durable);

/// writeFolderTogether for a checkpoint folder and its pointer file:
/// process 0 commits with writeCheckpointFolder (ucp/Support/
/// CheckpointFolder.h). Returns what was done with the pointer, for the
/// user: empty when it was written (and on every process but 0).
llvm::Expected<std::string> writeCheckpointFolderTogether(
    ProcessGroup *group, llvm::StringRef folder, llvm::StringRef pointer,
    llvm::StringRef input, const GroupFingerprint &plan,
    llvm::function_ref<llvm::Error(llvm::StringRef)> write, bool durable);

/// Adds the names and sizes of the input files `files` to `fingerprint`,
/// so that processes reading other files (a node that sees another
/// version of the checkpoint) disagree. Names are relative to the input's
/// folder `root` where inside it: under the node-local storage model each
/// process reads its own folder (the argument naming it may differ).
void addInputFiles(GroupFingerprint &fingerprint, llvm::StringRef root,
                   llvm::ArrayRef<std::string> files);

/// Collective with `group`: `values` become their sums over its processes
/// (a job's files and bytes); nothing without one.
llvm::Error sumOverGroup(ProcessGroup *group, std::vector<int64_t> &values);

} // namespace ucp

#endif // UCP_ENGINE_GROUPOUTPUTS_H

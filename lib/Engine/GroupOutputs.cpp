//===- GroupOutputs.cpp - One job's outputs written by many processes -----===//

#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Support/CheckpointFolder.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/FileSystem.h"

#include <fcntl.h>
#include <numeric>
#include <unistd.h>

using namespace ucp;

std::vector<int> ucp::divideByBytes(llvm::ArrayRef<int64_t> bytes,
                                    int processes, llvm::ArrayRef<int> pinned) {
  std::vector<int64_t> load(std::max(processes, 1), 0);
  std::vector<int> owners(bytes.size(), 0);
  std::vector<size_t> order;
  for (size_t index = 0; index < bytes.size(); ++index) {
    int process = index < pinned.size() ? pinned[index] : -1;
    if (process < 0 || process >= int(load.size())) {
      order.push_back(index);
      continue;
    }
    owners[index] = process;
    load[process] += std::max<int64_t>(bytes[index], 1);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  for (size_t index : order) {
    int least = static_cast<int>(
        std::min_element(load.begin(), load.end()) - load.begin());
    owners[index] = least;
    load[least] += std::max<int64_t>(bytes[index], 1);
  }
  return owners;
}

size_t OutputShare::add(llvm::StringRef name, int64_t size, int process) {
  names.push_back(name.str());
  bytes.push_back(size);
  pinned.push_back(process);
  return names.size() - 1;
}

void OutputShare::divide(const ProcessGroup *group) {
  process = group ? group->getProcess() : 0;
  owners = divideByBytes(bytes, group ? group->getProcessCount() : 1, pinned);
}

bool OutputShare::isMine(size_t index) const {
  return index < owners.size() && owners[index] == process;
}

size_t OutputShare::countMine() const {
  return std::count(owners.begin(), owners.end(), process);
}

void OutputShare::addTo(GroupFingerprint &fingerprint) const {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += names[i] + "\t" + std::to_string(bytes[i]) + "\t" +
            std::to_string(owners[i]) + "\n";
  fingerprint.addValue("the outputs", std::to_string(names.size()));
  fingerprint.addDigest("the outputs' sizes and processes", text);
}

void ucp::addInputFiles(GroupFingerprint &fingerprint, llvm::StringRef root,
                        llvm::ArrayRef<std::string> files) {
  std::string text;
  for (const std::string &file : files) {
    uint64_t size = 0;
    std::error_code ec = llvm::sys::fs::file_size(file, size);
    llvm::StringRef name = file;
    if (name.consume_front(root))
      name.consume_front("/");
    text +=
        (name + "\t" + (ec ? ec.message() : std::to_string(size)) + "\n").str();
  }
  fingerprint.addValue("the input files", std::to_string(files.size()));
  fingerprint.addDigest("the input files' names and sizes", text);
}

/// Waits until what this process wrote under `folder` is on disk: one
/// syncfs of its file system, as OutputFolder::commit does.
static llvm::Error syncWrites(llvm::StringRef folder) {
  int descriptor = ::open(folder.str().c_str(), O_RDONLY | O_DIRECTORY);
  if (descriptor < 0 || ::syncfs(descriptor) != 0) {
    std::error_code ec(errno, std::generic_category());
    if (descriptor >= 0)
      ::close(descriptor);
    return makeError(folder + ": cannot flush to disk: " + ec.message());
  }
  ::close(descriptor);
  return llvm::Error::success();
}

/// `error`'s message with the staged folder's path replaced by the
/// output's.
static llvm::Error renameInMessage(llvm::Error error, llvm::StringRef staged,
                                   llvm::StringRef folder) {
  if (!error || staged.empty())
    return error;
  std::string message = llvm::toString(std::move(error));
  for (size_t at = message.find(staged); at != std::string::npos;
       at = message.find(staged, at + folder.size()))
    message.replace(at, staged.size(), folder.str());
  return makeError(message);
}

/// Collective: process 0's `text` on every process.
static llvm::Error broadcastText(ProcessGroup &group, std::string &text) {
  std::vector<int64_t> size = {
      group.getProcess() == 0 ? static_cast<int64_t>(text.size()) : 0};
  if (llvm::Error error = group.reduce(size, ProcessGroup::Reduction::Max))
    return error;
  text.resize(size[0]);
  return group.broadcast({text.data(), text.size()}, 0);
}

llvm::Error ucp::writeFolderTogether(
    ProcessGroup *group, llvm::StringRef folder, const GroupFingerprint &plan,
    FolderCommitter commit,
    llvm::function_ref<llvm::Error(llvm::StringRef)> write, bool durable) {
  if (!group)
    return commit(write);
  if (llvm::Error error = agreeOnFingerprint(*group, plan))
    return error;
  // Every process runs the same collectives in the same order: the staged
  // folder's path (empty when process 0 could not make it), the outcome of
  // the writes, the outcome of the commit.
  std::optional<llvm::Error> written;
  auto writeHere = [&](llvm::StringRef staged) -> llvm::Error {
    std::string path = staged.str();
    if (llvm::Error error = broadcastText(*group, path))
      return error;
    if (path.empty())
      return llvm::Error::success();
    llvm::Error local = write(path);
    if (!local && durable && group->getProcess() != 0)
      local = syncWrites(path);
    written = group->agree(renameInMessage(std::move(local), path, folder));
    if (!*written)
      return llvm::Error::success();
    std::string message = llvm::toString(std::move(*written));
    written = makeError(message);
    return makeError(message);
  };
  llvm::Error committed = llvm::Error::success();
  if (group->getProcess() == 0) {
    committed = commit(writeHere);
    if (!written) { // The folder was not made: the others still wait.
      std::string none;
      if (llvm::Error error = broadcastText(*group, none))
        return llvm::joinErrors(std::move(committed), std::move(error));
    }
  } else if (llvm::Error error = writeHere("")) {
    if (!written) // The group broke before the writes.
      return error;
    llvm::consumeError(std::move(error));
  }
  // The writes' failure is every process's already; process 0's commit
  // (or its failure to stage) becomes everyone's here.
  llvm::Error outcome = group->agree(std::move(committed));
  if (written && *written) {
    llvm::consumeError(std::move(outcome));
    return std::move(*written);
  }
  return outcome;
}

llvm::Expected<std::string> ucp::writeCheckpointFolderTogether(
    ProcessGroup *group, llvm::StringRef folder, llvm::StringRef pointer,
    llvm::StringRef input, const GroupFingerprint &plan,
    llvm::function_ref<llvm::Error(llvm::StringRef)> write, bool durable) {
  std::string pointerNote;
  auto commit =
      [&](llvm::function_ref<llvm::Error(llvm::StringRef)> staged)
      -> llvm::Error {
    llvm::Expected<std::string> note =
        writeCheckpointFolder(folder, pointer, input, staged, durable);
    if (!note)
      return note.takeError();
    pointerNote = std::move(*note);
    return llvm::Error::success();
  };
  if (llvm::Error error =
          writeFolderTogether(group, folder, plan, commit, write, durable))
    return std::move(error);
  return pointerNote;
}

llvm::Error ucp::sumOverGroup(ProcessGroup *group,
                              std::vector<int64_t> &values) {
  if (!group)
    return llvm::Error::success();
  return group->reduce(values, ProcessGroup::Reduction::Sum);
}

//===- OutputFile.h - Writing the tools' outputs safely ---------*- C++ -*-===//
//
// Every file a tool writes goes through OutputFile, so that every output
// behaves the same way:
//
//  * it is written under a temporary name beside its destination and renamed
//    into place by commit(): a failed or interrupted run leaves no partial
//    output, and an existing file is replaced whole or not at all;
//  * nothing but a regular file is ever replaced: a character device or a
//    FIFO (`-o /dev/null`, `/dev/stdout`, a pipe of process substitution)
//    is written in place, with no temporary and no rename, and anything
//    else that exists (a directory, a socket) is refused; "-" writes to
//    standard output;
//  * a destination that is a symbolic link is followed: the file it points
//    to is replaced and the link is kept; a link to nothing is refused;
//  * temporaries are named `<destination>.tmp-<host>-<pid>-<random>`; a run
//    killed with SIGKILL cannot remove its own, so each run removes, in a
//    folder it writes to, the temporaries of processes of this host that no
//    longer exist.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_OUTPUTFILE_H
#define UCP_SUPPORT_OUTPUTFILE_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace ucp {

/// An output being written; removed unless committed.
class OutputFile {
public:
  /// Starts writing `path` ("-": standard output). Writes a character
  /// device or FIFO in place; refuses a destination that exists and is
  /// neither that nor a regular file, or whose folder does not exist.
  static llvm::Expected<std::unique_ptr<OutputFile>>
  create(llvm::StringRef path);
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  /// The stream writing the temporary file (or standard output).
  llvm::raw_ostream &os();
  /// The descriptor of the temporary file, for writers that map it; -1 for
  /// standard output.
  int getDescriptor() const { return descriptor; }
  /// The destination as given, for messages.
  llvm::StringRef getPath() const { return path; }
  /// Whether this writes standard output.
  bool isStandardOutput() const { return path == "-"; }
  /// Whether this writes a device or pipe in place (nothing to map).
  bool isDirect() const { return direct; }

  /// Sizes the file to `size` bytes and allocates its blocks where the
  /// file system can, so that a full disk is an error now rather than
  /// halfway through the writes (or SIGBUS through a mapping).
  llvm::Error reserve(uint64_t size);
  /// Writes `bytes` at `offset` of the file (not standard output); into a
  /// pipe, only in order.
  llvm::Error writeAt(uint64_t offset, llvm::StringRef bytes);

  /// Closes the file and renames it into place. With `durable`, waits first
  /// until its data is on disk, so that a crash after the rename cannot
  /// leave an empty or partial file under the final name.
  llvm::Error commit(bool durable = false);

private:
  OutputFile() = default;
  std::string path;
  /// Where the file lands once committed: `path`, links followed.
  std::string destination;
  std::string temporary;
  int descriptor = -1;
  std::unique_ptr<llvm::raw_fd_ostream> stream;
  bool committed = false;
  /// Whether the temporary is in LLVM's list of files removed on a signal
  /// (not when a registered folder holding it goes anyway).
  bool removedOnSignal = false;
  /// Written in place (a device or pipe), and the bytes written to a pipe.
  bool direct = false;
  uint64_t streamed = 0;
};

/// Checks, without writing anything, that OutputFile::create would accept
/// `path`: so that a run finds a bad output before its work, not after.
llvm::Error checkOutputPath(llvm::StringRef path);

/// Writes `path` ("-": standard output) with what `write` prints, through
/// an OutputFile: nothing is left at `path` unless `write` succeeds.
llvm::Error
writeOutputFile(llvm::StringRef path,
                llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

/// A folder of outputs being written: a temporary folder beside its
/// destination (named as temporary files are), removed with everything in
/// it unless committed, renamed into place by commit(). The destination
/// must not exist: a folder of outputs never replaces or merges into
/// anything. Missing parent folders are made, and removed again (if still
/// empty) unless the folder is committed. An interrupt signal (see
/// installSignalHandlers) removes both before the process ends; a run
/// killed by SIGKILL leaves them, and the next run writing beside the
/// temporary folder removes it, as it removes stale temporary files.
class OutputFolder {
public:
  static llvm::Expected<std::unique_ptr<OutputFolder>>
  create(llvm::StringRef path);
  ~OutputFolder();
  OutputFolder(const OutputFolder &) = delete;
  OutputFolder &operator=(const OutputFolder &) = delete;

  /// Where the outputs go until commit().
  llvm::StringRef getTemporaryPath() const { return temporary; }
  /// Renames the folder into place; with `durable`, once everything in it
  /// and the rename are on disk (one syncfs of its file system: a single
  /// wait for every file, rather than one per file).
  llvm::Error commit(bool durable = false);

private:
  OutputFolder() = default;
  /// Takes the folder and its made parents off the signal handler's list.
  void keepOnSignal();
  std::string path;
  std::string temporary;
  /// The parent folders made for it, deepest first.
  std::vector<std::string> madeParents;
  bool committed = false;
};

/// Waits until the entries of `folder` (files renamed into it, folders
/// created in it) are on disk.
std::error_code syncFolder(llvm::StringRef folder);

} // namespace ucp

#endif // UCP_SUPPORT_OUTPUTFILE_H

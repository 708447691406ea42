//===- CheckpointFolder.cpp - A checkpoint folder and its pointer ---------===//

#include "ucp/Support/CheckpointFolder.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/OutputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

using namespace ucp;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

/// The pointer file beside `folder`.
static std::string getPointerPath(llvm::StringRef folder,
                                  llvm::StringRef pointer) {
  llvm::SmallString<256> file(path::parent_path(folder));
  path::append(file, pointer);
  return file.str().str();
}

/// Refuses a pointer file that exists and is not a regular file.
static llvm::Error checkPointerFile(llvm::StringRef file) {
  struct stat status;
  if (::lstat(file.str().c_str(), &status) != 0)
    return errno == ENOENT
               ? llvm::Error::success()
               : makeError(file, std::string("cannot stat: ") +
                                     std::strerror(errno));
  if (S_ISREG(status.st_mode))
    return llvm::Error::success();
  return makeError(file, std::string("exists and is ") +
                             describeFileKind(status.st_mode) +
                             "; DeepSpeed reads the tag from a regular file "
                             "there, which this run would write: move it "
                             "away first");
}

/// `path` made absolute with links resolved, as far as it exists: the
/// missing tail is appended as written.
static std::string getRealPath(llvm::StringRef path) {
  llvm::SmallString<256> absolute(path);
  (void)fs::make_absolute(absolute);
  llvm::SmallString<256> tail;
  llvm::StringRef existing = absolute;
  while (!existing.empty() && !fs::exists(existing)) {
    llvm::SmallString<256> next(path::filename(existing));
    path::append(next, tail);
    tail = next;
    existing = path::parent_path(existing);
  }
  llvm::SmallString<256> real;
  if (existing.empty() || fs::real_path(existing, real))
    real = existing;
  path::append(real, tail);
  path::remove_dots(real, /*remove_dot_dot=*/true);
  return real.str().str();
}

/// Whether `inner` is `outer` or lies inside it (both real paths).
static bool isWithin(llvm::StringRef inner, llvm::StringRef outer) {
  return inner == outer ||
         (inner.starts_with(outer) && inner.size() > outer.size() &&
          path::is_separator(inner[outer.size()]));
}

llvm::Expected<llvm::StringRef>
ucp::getCheckpointFolder(llvm::StringRef output, llvm::StringRef pointer,
                         llvm::StringRef input) {
  llvm::StringRef folder = output.rtrim('/');
  llvm::StringRef name = path::filename(folder);
  if (folder.empty() || name == "." || name == "..")
    return makeError("--output_folder '" + output + "' names no new folder (" +
                     pointer + " beside it names it)");
  if (!path::has_parent_path(folder))
    return makeError("--output_folder '" + output + "' has no parent folder: " +
                     pointer + " would be written in the current folder; "
                     "give PARENT/" + name + " (./" + name +
                     " if the current folder is meant)");
  if (!input.empty() && isWithin(getRealPath(folder), getRealPath(input)))
    return makeError("--output_folder '" + output + "' is inside the input " +
                     input + ", which would then hold a folder no checkpoint "
                     "has; write it elsewhere");
  if (llvm::Error error = checkPointerFile(getPointerPath(folder, pointer)))
    return std::move(error);
  return folder;
}

/// Whether the pointer `file` names `input`, the folder read, which lies
/// beside it: rewriting it would point DeepSpeed away from the input.
static bool namesInput(llvm::StringRef file, llvm::StringRef input) {
  if (input.empty() || !fs::is_regular_file(file))
    return false;
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFile(file);
  if (!text)
    return false;
  llvm::SmallString<256> named(path::parent_path(file));
  path::append(named, (*text)->getBuffer().trim());
  return getRealPath(named) == getRealPath(input);
}

llvm::Expected<std::string> ucp::writeCheckpointFolder(
    llvm::StringRef folder, llvm::StringRef pointer, llvm::StringRef input,
    llvm::function_ref<llvm::Error(llvm::StringRef)> write, bool durable) {
  std::string file = getPointerPath(folder, pointer);
  llvm::Expected<std::unique_ptr<OutputFolder>> staged =
      OutputFolder::create(folder);
  if (!staged)
    return staged.takeError();
  if (llvm::Error error = write((*staged)->getTemporaryPath())) {
    // Messages name the files where they were going, not the temporary
    // folder, which is removed.
    std::string message = llvm::toString(std::move(error));
    std::string temporary = (*staged)->getTemporaryPath().str();
    for (size_t at = message.find(temporary); at != std::string::npos;
         at = message.find(temporary, at + folder.size()))
      message.replace(at, temporary.size(), folder.str());
    return makeError(message);
  }
  // The pointer may have changed during the run: checked again before the
  // folder takes its name.
  if (llvm::Error error = checkPointerFile(file))
    return std::move(error);
  bool keepPointer = namesInput(file, input);
  if (llvm::Error error = (*staged)->commit(durable))
    return std::move(error);
  if (keepPointer)
    return file + " names the input " + path::filename(input).str() +
           " and was left as it is; load the output by its tag '" +
           path::filename(folder).str() + "'";
  llvm::Expected<std::unique_ptr<OutputFile>> named = OutputFile::create(file);
  if (!named)
    return named.takeError();
  (*named)->os() << path::filename(folder);
  if (llvm::Error error = (*named)->commit(durable))
    return std::move(error);
  return std::string();
}

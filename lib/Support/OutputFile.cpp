//===- OutputFile.cpp - Writing the tools' outputs safely -----------------===//

#include "ucp/Support/OutputFile.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/Signals.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

using namespace ucp;
namespace fs = llvm::sys::fs;

/// This host's name as temporaries carry it: letters, digits and dots.
static const std::string &getHostTag() {
  static const std::string tag = [] {
    char name[256] = {0};
    if (::gethostname(name, sizeof(name) - 1) != 0)
      return std::string("host");
    std::string text;
    for (char c : llvm::StringRef(name))
      text += llvm::isAlnum(c) || c == '.' ? c : '_';
    return text.empty() ? std::string("host") : text;
  }();
  return tag;
}

/// Returns the process that made the temporary `name` if this host's
/// naming scheme says so: `<base>.tmp-<host>-<pid>-<6 characters>`.
static std::optional<pid_t> getTemporaryOwner(llvm::StringRef name) {
  std::string marker = ".tmp-" + getHostTag() + "-";
  size_t at = name.rfind(marker);
  if (at == llvm::StringRef::npos || at == 0)
    return std::nullopt;
  llvm::StringRef rest = name.substr(at + marker.size());
  auto [pidText, random] = rest.split('-');
  unsigned long long pid;
  if (random.size() != 6 || pidText.getAsInteger(10, pid) || pid == 0)
    return std::nullopt;
  return static_cast<pid_t>(pid);
}

/// Removes, once per folder and process, the temporaries in `folder` whose
/// process of this host is gone (killed before it could remove them). This
/// process's own are never stale: it is alive.
static void removeStaleTemporaries(llvm::StringRef folder) {
  static std::mutex mutex;
  static llvm::StringSet<> swept;
  std::lock_guard<std::mutex> lock(mutex);
  if (!swept.insert(folder).second)
    return;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    std::optional<pid_t> owner = getTemporaryOwner(name);
    if (!owner || *owner == ::getpid())
      continue;
    bool gone = ::kill(*owner, 0) != 0 && errno == ESRCH;
    if (gone && it->type() == fs::file_type::regular_file)
      fs::remove(it->path());
    else if (gone && it->type() == fs::file_type::directory_file)
      fs::remove_directories(it->path());
  }
}

namespace {
/// Where an output lands, and the permissions of the file it replaces;
/// `direct` for a character device or a FIFO, written in place.
struct Destination {
  std::string path;
  std::optional<mode_t> replacedMode;
  bool direct = false;
};
} // namespace

/// Resolves the destination of `path`: itself, or for a symbolic link the
/// file it points to. A character device or FIFO (`/dev/null`, a pipe of
/// process substitution, `/dev/stdout` on a terminal or pipe) is written
/// in place; any other kind of file that exists is refused.
static llvm::Expected<Destination> resolveDestination(llvm::StringRef path) {
  llvm::SmallString<256> text(path);
  struct stat status;
  if (::lstat(text.c_str(), &status) != 0) {
    if (errno != ENOENT)
      return makeError(path,
                       std::string("cannot stat: ") + std::strerror(errno));
    llvm::SmallString<256> folder(llvm::sys::path::parent_path(path));
    if (folder.empty())
      folder = ".";
    if (!fs::is_directory(folder))
      return makeError(path, "cannot write: the folder " + folder +
                                 " does not exist");
    return Destination{path.str(), std::nullopt};
  }
  std::string destination = path.str();
  if (S_ISLNK(status.st_mode)) {
    // A link to a pipe (/dev/fd/N) resolves to no path, only to a kind.
    if (::stat(text.c_str(), &status) != 0)
      return makeError(path, "is a symbolic link to a file that does not "
                             "exist; write to the file it should point to");
    if (S_ISCHR(status.st_mode) || S_ISFIFO(status.st_mode))
      return Destination{destination, std::nullopt, /*direct=*/true};
    llvm::SmallString<256> resolved;
    if (fs::real_path(path, resolved))
      return makeError(path, "is a symbolic link that cannot be resolved");
    destination = resolved.str().str();
  }
  if (S_ISCHR(status.st_mode) || S_ISFIFO(status.st_mode))
    return Destination{destination, std::nullopt, /*direct=*/true};
  if (!S_ISREG(status.st_mode))
    return makeError(path, std::string("exists and is ") +
                               describeFileKind(status.st_mode) +
                               "; an output replaces only a regular file, "
                               "and writes in place only into a device or a "
                               "pipe");
  return Destination{destination, status.st_mode & 07777};
}

llvm::Expected<std::unique_ptr<OutputFile>>
OutputFile::create(llvm::StringRef path) {
  auto file = std::unique_ptr<OutputFile>(new OutputFile());
  file->path = path.str();
  if (path == "-")
    return file;
  llvm::Expected<Destination> destination = resolveDestination(path);
  if (!destination)
    return destination.takeError();
  file->destination = std::move(destination->path);
  if (destination->direct) {
    // No temporary and no rename: a device or pipe is not replaced.
    file->descriptor =
        ::open(file->destination.c_str(), O_WRONLY | O_CLOEXEC);
    if (file->descriptor < 0)
      return makeError(path, std::string("cannot open for writing: ") +
                                 std::strerror(errno));
    file->direct = true;
    return file;
  }
  llvm::StringRef folder = llvm::sys::path::parent_path(file->destination);
  removeStaleTemporaries(folder.empty() ? "." : folder);

  llvm::SmallString<256> temporary;
  std::string model = file->destination + ".tmp-" + getHostTag() + "-" +
                      std::to_string(::getpid()) + "-%%%%%%";
  if (std::error_code ec =
          fs::createUniqueFile(model, file->descriptor, temporary))
    return makeError(path, "cannot create a temporary file beside it: " +
                               ec.message());
  file->temporary = temporary.str().str();
  // A replaced file keeps its permissions: a private file stays private.
  if (destination->replacedMode)
    (void)::fchmod(file->descriptor, *destination->replacedMode);
  // An interrupted run (Ctrl-C, a batch system's SIGTERM) leaves nothing:
  // the temporary goes, alone or with the output folder holding it. (LLVM
  // keeps one entry per file ever registered and walks them all on each
  // registration, so that a folder of 100,000 files would take quadratic
  // time and memory growing with every file.)
  if (!isRemovedOnSignal(file->temporary)) {
    llvm::sys::RemoveFileOnSignal(file->temporary);
    file->removedOnSignal = true;
  }
  return file;
}

OutputFile::~OutputFile() {
  stream.reset();
  if (descriptor >= 0)
    ::close(descriptor);
  if (!committed && !temporary.empty()) {
    fs::remove(temporary);
    if (removedOnSignal)
      llvm::sys::DontRemoveFileOnSignal(temporary);
  }
}

llvm::raw_ostream &OutputFile::os() {
  if (isStandardOutput())
    return llvm::outs();
  if (!stream)
    stream = std::make_unique<llvm::raw_fd_ostream>(descriptor,
                                                    /*shouldClose=*/false);
  return *stream;
}

llvm::Error OutputFile::reserve(uint64_t size) {
  if (direct)
    return llvm::Error::success(); // A device or pipe has no size to set.
  if (std::error_code ec = fs::resize_file(descriptor, size))
    return makeError(path, "cannot size the output: " + ec.message());
#if defined(__linux__)
  if (::fallocate(descriptor, 0, 0, static_cast<off_t>(size)) != 0 &&
      errno != EOPNOTSUPP && errno != ENOSYS)
    return makeError(path,
                     "cannot reserve " + std::to_string(size) +
                         " bytes for the output: " + std::strerror(errno));
#endif
  return llvm::Error::success();
}

llvm::Error OutputFile::writeAt(uint64_t offset, llvm::StringRef bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::pwrite(descriptor, bytes.data(), bytes.size(),
                               static_cast<off_t>(offset));
    // A pipe has no offsets: it takes bytes in order, or not at all.
    if (written < 0 && errno == ESPIPE && direct) {
      if (offset != streamed)
        return makeError(path, "is a pipe, and this output is written out "
                               "of order; write it to a regular file");
      written = ::write(descriptor, bytes.data(), bytes.size());
      if (written > 0)
        streamed += written;
    }
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      return makeError(path, std::string("cannot write: ") +
                                 std::strerror(written < 0 ? errno : ENOSPC));
    bytes = bytes.drop_front(written);
    offset += written;
  }
  return llvm::Error::success();
}

llvm::Error OutputFile::commit(bool durable) {
  if (isStandardOutput()) {
    llvm::outs().flush();
    committed = true;
    return llvm::Error::success();
  }
  if (stream) {
    stream->flush();
    if (stream->has_error()) {
      std::error_code ec = stream->error();
      stream->clear_error();
      return makeError(path, "cannot write: " + ec.message());
    }
  }
  if (direct) {
    // A device or pipe: nothing to sync or rename.
    stream.reset();
    ::close(descriptor);
    descriptor = -1;
    committed = true;
    return llvm::Error::success();
  }
  if (durable && ::fsync(descriptor) != 0)
    return makeError(path, std::string("cannot write to disk: ") +
                               std::strerror(errno));
  stream.reset();
  ::close(descriptor);
  descriptor = -1;
  if (std::error_code ec = fs::rename(temporary, destination))
    return makeError(path, "cannot rename the finished file into place: " +
                               ec.message());
  committed = true;
  if (removedOnSignal)
    llvm::sys::DontRemoveFileOnSignal(temporary);
  return llvm::Error::success();
}

llvm::Error ucp::checkOutputPath(llvm::StringRef path) {
  if (path == "-")
    return llvm::Error::success();
  return resolveDestination(path).takeError();
}

llvm::Error ucp::writeOutputFile(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  llvm::Expected<std::unique_ptr<OutputFile>> file = OutputFile::create(path);
  if (!file)
    return file.takeError();
  if (llvm::Error error = write((*file)->os()))
    return error;
  return (*file)->commit();
}

/// Waits until `path`, opened with `flags`, is on disk.
static std::error_code syncPath(llvm::StringRef path, int flags) {
  int fd = ::open(path.str().c_str(), flags | O_CLOEXEC);
  if (fd < 0)
    return std::error_code(errno, std::generic_category());
  int result = ::fsync(fd);
  int error = errno;
  ::close(fd);
  return result == 0 ? std::error_code()
                     : std::error_code(error, std::generic_category());
}

/// Waits until the file system holding `path` is on disk.
static std::error_code syncFileSystem(llvm::StringRef path) {
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::error_code(errno, std::generic_category());
  int result = ::syncfs(fd);
  int error = errno;
  ::close(fd);
  return result == 0 ? std::error_code()
                     : std::error_code(error, std::generic_category());
}

std::error_code ucp::syncFolder(llvm::StringRef folder) {
  return syncPath(folder, O_RDONLY | O_DIRECTORY);
}

/// The folder holding `path` ("." for a bare name).
static std::string getParent(llvm::StringRef path) {
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  return parent.empty() ? "." : parent.str();
}

llvm::Expected<std::unique_ptr<OutputFolder>>
OutputFolder::create(llvm::StringRef path) {
  auto folder = std::unique_ptr<OutputFolder>(new OutputFolder());
  folder->path = path.str();
  struct stat status;
  if (::lstat(folder->path.c_str(), &status) == 0)
    return makeError(path, std::string("exists (") +
                               describeFileKind(status.st_mode) +
                               "); the output folder must be new, so that "
                               "nothing in it is replaced or mixed with what "
                               "was there");
  std::string parent = getParent(path);
  for (llvm::StringRef at = parent; !at.empty() && !fs::exists(at);
       at = llvm::sys::path::parent_path(at))
    folder->madeParents.push_back(at.str());
  if (std::error_code ec = fs::create_directories(parent))
    return makeError(path, "cannot create the folder " + parent + ": " +
                               ec.message());
  removeStaleTemporaries(parent);
  // Unique as createUniqueFile's names are, but a folder.
  for (int attempt = 0;; ++attempt) {
    llvm::SmallString<256> name;
    fs::createUniquePath(path + ".tmp-" + getHostTag() + "-" +
                             std::to_string(::getpid()) + "-%%%%%%",
                         name, /*MakeAbsolute=*/false);
    std::error_code ec = fs::create_directory(name, /*IgnoreExisting=*/false);
    if (!ec) {
      folder->temporary = name.str().str();
      break;
    }
    if (ec != std::errc::file_exists || attempt == 100)
      return makeError(path, "cannot create a temporary folder beside it: " +
                                 ec.message());
  }
  // An interrupted run (Ctrl-C, a batch system's SIGTERM) leaves nothing.
  removeFolderOnSignal(folder->temporary, /*withContents=*/true);
  for (const std::string &parent : folder->madeParents)
    removeFolderOnSignal(parent, /*withContents=*/false);
  return folder;
}

void OutputFolder::keepOnSignal() {
  dontRemoveFolderOnSignal(temporary);
  for (const std::string &parent : madeParents)
    dontRemoveFolderOnSignal(parent);
}

OutputFolder::~OutputFolder() {
  keepOnSignal();
  if (committed)
    return;
  if (!temporary.empty())
    fs::remove_directories(temporary);
  for (const std::string &parent : madeParents)
    fs::remove(parent); // Only an empty folder is removed.
}

llvm::Error OutputFolder::commit(bool durable) {
  if (durable)
    if (std::error_code ec = syncFileSystem(temporary))
      return makeError(path, "cannot write to disk: " + ec.message());
  // rename(2) onto an existing empty folder would succeed: check again.
  if (fs::exists(path))
    return makeError(path, "appeared while the output was being written; "
                           "nothing was written");
  // From here the folder is the output: a signal leaves it.
  keepOnSignal();
  if (std::error_code ec = fs::rename(temporary, path)) {
    removeFolderOnSignal(temporary, /*withContents=*/true);
    return makeError(path, "cannot rename the finished folder into place: " +
                               ec.message());
  }
  committed = true;
  if (durable)
    if (std::error_code ec = syncFolder(getParent(path)))
      return makeError(path, "is in place, but its folder could not be synced "
                             "to disk: " +
                                 ec.message());
  return llvm::Error::success();
}

//===- NodeLocalFolder.cpp - A folder each process holds a part of --------===//

#include "ucp/Distributed/NodeLocalFolder.h"
#include "ucp/Plan/CopyProgram.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace ucp;
namespace fs = llvm::sys::fs;

namespace {

/// Appends `value` to `out` as 8 bytes.
void putWord(std::string &out, int64_t value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof value);
}

/// Reads 8 bytes of `in` at `at` (advanced); false past its end.
bool takeWord(llvm::StringRef in, size_t &at, int64_t &value) {
  if (in.size() - at < sizeof value)
    return false;
  std::memcpy(&value, in.data() + at, sizeof value);
  at += sizeof value;
  return true;
}

/// What a replica of `file` holds: every byte but the holes, as
/// (offset, size, bytes) segments.
std::string makeSkeleton(const llvm::MemoryBuffer &file,
                         const HoleFinder &findHoles) {
  std::string out;
  int64_t at = 0, size = file.getBufferSize();
  auto addSegment = [&](int64_t end) {
    if (end <= at)
      return;
    putWord(out, at);
    putWord(out, end - at);
    out.append(file.getBufferStart() + at, end - at);
  };
  for (auto [offset, bytes] : findHoles(file)) {
    addSegment(offset);
    at = offset + bytes;
  }
  addSegment(size);
  return out;
}

/// Writes the replica `path` of `size` bytes from `skeleton`: holes where
/// it has no segment.
llvm::Error writeReplica(llvm::StringRef path, int64_t size,
                         llvm::StringRef skeleton) {
  int fd = -1;
  if (std::error_code ec = fs::openFileForWrite(path, fd, fs::CD_CreateNew))
    return makeError("cannot create the replica '" + path +
                     "': " + ec.message());
  auto closeFile = llvm::make_scope_exit([&] { ::close(fd); });
  if (std::error_code ec = fs::resize_file(fd, size))
    return makeError("cannot size the replica '" + path + "': " + ec.message());
  size_t at = 0;
  while (at < skeleton.size()) {
    int64_t offset, bytes;
    if (!takeWord(skeleton, at, offset) || !takeWord(skeleton, at, bytes) ||
        bytes < 0 || offset < 0 || offset + bytes > size ||
        static_cast<int64_t>(skeleton.size() - at) < bytes)
      return makeError("the skeleton of '" + path + "' is malformed");
    for (int64_t done = 0; done < bytes;) {
      ssize_t wrote = ::pwrite(fd, skeleton.data() + at + done, bytes - done,
                               offset + done);
      if (wrote <= 0)
        return makeError("cannot write the replica '" + path +
                         "': " + std::strerror(errno));
      done += wrote;
    }
    at += bytes;
  }
  return llvm::Error::success();
}

/// The regular files under `folder` (in its subfolders too, not through
/// links to folders) as "name\tsize\n" lines, sorted; a name is the
/// file's path within `folder`.
llvm::Expected<std::string> listFolder(llvm::StringRef folder) {
  std::error_code ec;
  std::vector<std::string> lines;
  for (fs::recursive_directory_iterator it(folder, ec, /*follow=*/false), end;
       !ec && it != end; it.increment(ec)) {
    llvm::ErrorOr<fs::basic_file_status> status = it->status();
    if (!status)
      return makeError("cannot read '" + it->path() +
                       "': " + status.getError().message());
    if (status->type() != fs::file_type::regular_file)
      continue;
    llvm::StringRef name = it->path();
    name.consume_front(folder);
    name = name.ltrim('/');
    // The listing's own separators cannot be in a name.
    if (name.find_first_of("\t\n") != llvm::StringRef::npos)
      return makeError("'" + it->path() +
                       "': a file name with a tab or a line break, which "
                       "the processes cannot list to each other");
    lines.push_back(name.str() + "\t" + std::to_string(status->getSize()) +
                    "\n");
  }
  if (ec)
    return makeError("cannot list the folder '" + folder +
                     "': " + ec.message());
  llvm::sort(lines);
  return llvm::join(lines, "");
}

/// Whether process `pid` has ended: it does not exist, or is a zombie
/// nobody reaps (as under a container's first process).
bool hasEnded(int pid) {
  if (::kill(pid, 0) != 0)
    return errno == ESRCH;
  auto stat = llvm::MemoryBuffer::getFileAsStream(
      "/proc/" + std::to_string(pid) + "/stat");
  if (!stat)
    return false;
  // "pid (command) state ...": the state follows the last ')'.
  llvm::StringRef text = (*stat)->getBuffer();
  llvm::StringRef state = text.substr(text.rfind(')') + 1).ltrim();
  return state.starts_with("Z") || state.starts_with("X");
}

/// Removes the local folders that processes killed before they could
/// (their names carry their process ids) left in the temporary folder.
void removeStaleFolders() {
  llvm::SmallString<256> temp;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, temp);
  std::error_code ec;
  for (fs::directory_iterator it(temp, ec, /*follow_symlinks=*/false), end;
       !ec && it != end; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int pid = 0;
    if (!name.consume_front("ucp-node-local-") ||
        name.split('-').first.getAsInteger(10, pid) || pid <= 0)
      continue;
    if (hasEnded(pid))
      fs::remove_directories(it->path(), /*IgnoreErrors=*/true);
  }
}

} // namespace

llvm::Expected<std::unique_ptr<NodeLocalFolder>>
NodeLocalFolder::open(MPI_Comm comm, llvm::StringRef folder,
                      const MpiGroupOptions &options, HoleFinder findHoles) {
  std::unique_ptr<NodeLocalFolder> local(new NodeLocalFolder());
  local->comm = comm;
  local->options = options;
  local->folderPath = folder.str();
  llvm::Expected<std::unique_ptr<MpiGroup>> group =
      MpiGroup::create(comm, {}, options);
  if (!group)
    return group.takeError();
  local->group = std::move(*group);
  MpiGroup &processes = *local->group;
  llvm::Expected<std::string> listing = listFolder(folder);
  std::string own = listing ? *listing : "";
  if (llvm::Error error = processes.agree(listing.takeError()))
    return std::move(error);
  llvm::Expected<std::vector<std::string>> lists = local->group->allGather(own);
  if (!lists)
    return lists.takeError();
  for (auto [process, list] : llvm::enumerate(*lists)) {
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(list).split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines) {
      auto [name, sizeText] = line.split('\t');
      int64_t size = 0;
      if (sizeText.getAsInteger(10, size))
        return makeError("process " + llvm::Twine(process) +
                         " listed a malformed entry '" + line + "'");
      auto [known, added] = local->sizes.insert({name.str(), size});
      if (!added && known->second != size)
        return makeError(
            "'" + name + "' in '" + folder + "' has " +
            llvm::Twine(known->second) + " bytes on process " +
            llvm::Twine(local->holders[name.str()]) + " but " +
            llvm::Twine(size) + " on process " + llvm::Twine(process) +
            ": the processes hold different versions of the checkpoint");
      if (added)
        local->holders[name.str()] = process;
      if (static_cast<int>(process) == processes.getProcess())
        local->heldHere[name.str()] = true;
    }
  }
  if (local->sizes.empty())
    return makeError("no process holds a file of '" + folder + "'");
  if (llvm::Error error = processes.agree(local->makeLocalFolder(folder)))
    return std::move(error);
  if (llvm::Error error = local->shareSkeletons(folder, findHoles))
    return std::move(error);
  return local;
}

NodeLocalFolder::~NodeLocalFolder() { removeLocalFolder(); }

void NodeLocalFolder::removeLocalFolder() {
  if (tempRoot.empty())
    return;
  // Links and replicas only: the held files the links point to stay.
  for (const auto &[name, size] : sizes)
    fs::remove(localPath + "/" + name);
  // The subfolders made for them, the deepest first.
  for (const std::string &folder : llvm::reverse(subfolders))
    fs::remove(folder);
  fs::remove(localPath);
  fs::remove(tempRoot);
  tempRoot.clear();
}

bool NodeLocalFolder::holds(llvm::StringRef name) const {
  return heldHere.count(name.str());
}

int NodeLocalFolder::getHolder(llvm::StringRef name) const {
  auto found = holders.find(name.str());
  return found == holders.end() ? -1 : found->second;
}

llvm::Error NodeLocalFolder::makeLocalFolder(llvm::StringRef folder) {
  llvm::SmallString<256> root;
  removeStaleFolders();
  std::string prefix = "ucp-node-local-" + std::to_string(::getpid());
  if (std::error_code ec = fs::createUniqueDirectory(prefix, root))
    return makeError("cannot make a local folder for '" + folder +
                     "': " + ec.message());
  tempRoot = root.str().str();
  llvm::SmallString<256> local(root);
  llvm::StringRef base = llvm::sys::path::filename(
      llvm::sys::path::remove_leading_dotslash(folder));
  llvm::sys::path::append(local,
                          base.empty() || base == "." ? "checkpoint" : base);
  localPath = local.str().str();
  if (std::error_code ec = fs::create_directory(localPath))
    return makeError("cannot make '" + localPath + "': " + ec.message());
  for (const auto &[name, size] : sizes) {
    if (llvm::Error error = makeSubfolders(name))
      return error;
    if (!holds(name))
      continue;
    llvm::SmallString<256> target;
    if (std::error_code ec = fs::real_path(folder + "/" + name, target))
      return makeError("cannot resolve '" + folder + "/" + name +
                       "': " + ec.message());
    if (std::error_code ec = fs::create_link(target, localPath + "/" + name))
      return makeError("cannot link '" + name + "' into '" + localPath +
                       "': " + ec.message());
  }
  return llvm::Error::success();
}

llvm::Error NodeLocalFolder::makeSubfolders(llvm::StringRef name) {
  llvm::StringRef parent = llvm::sys::path::parent_path(name);
  if (parent.empty())
    return llvm::Error::success();
  // Its parents first, so that the list runs from shallow to deep.
  if (llvm::Error error = makeSubfolders(parent))
    return error;
  std::string path = localPath + "/" + parent.str();
  if (fs::is_directory(path))
    return llvm::Error::success();
  if (std::error_code ec = fs::create_directory(path))
    return makeError("cannot make '" + path + "': " + ec.message());
  subfolders.push_back(path);
  return llvm::Error::success();
}

llvm::Error NodeLocalFolder::shareSkeletons(llvm::StringRef folder,
                                            const HoleFinder &findHoles) {
  for (const auto &[name, size] : sizes) {
    int holder = holders[name];
    // Each process knows whether every process holds the file: then no
    // replica is made (storage that all share).
    std::vector<int64_t> heldBy = {holds(name) ? 1 : 0};
    if (llvm::Error error = group->reduce(heldBy, ProcessGroup::Reduction::Sum))
      return error;
    if (heldBy[0] == group->getProcessCount())
      continue;
    std::string skeleton;
    llvm::Error local = llvm::Error::success();
    if (group->getProcess() == holder) {
      auto file =
          llvm::MemoryBuffer::getFile(folder + "/" + name, false, false);
      if (file)
        skeleton = makeSkeleton(**file, findHoles);
      else
        local = makeError("cannot read '" + folder + "/" + name +
                          "': " + file.getError().message());
    }
    if (llvm::Error error = group->agree(std::move(local)))
      return error;
    int64_t length = skeleton.size();
    if (llvm::Error error = group->broadcast(
            {reinterpret_cast<char *>(&length), sizeof length}, holder))
      return error;
    if (length < 0 || length > INT_MAX)
      return makeError("the skeleton of '" + name + "' is too large to send");
    skeleton.resize(length);
    if (llvm::Error error =
            group->broadcast({skeleton.data(), skeleton.size()}, holder))
      return error;
    llvm::Error written =
        holds(name) ? llvm::Error::success()
                    : writeReplica(localPath + "/" + name, size, skeleton);
    if (llvm::Error error = group->agree(std::move(written)))
      return error;
  }
  return llvm::Error::success();
}

//===- Signals.cpp - Signal handlers for the tools ------------------------===//
//
// The folder removal runs inside a signal handler, so it uses only
// async-signal-safe calls: the registered folders sit in a fixed table of
// slots with atomic states (no lock, no allocation anywhere), and a folder is
// walked with openat, getdents64 and unlinkat on stack buffers, since
// opendir and the C++ file system calls allocate.
//
//===----------------------------------------------------------------------===//

#include "ucp/Support/Signals.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Signals.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

/// One slot of the table of registered folders: an absolute path, and
/// whether its contents go. The table is static, so that nothing is
/// allocated or freed while a handler on another thread may read it.
struct FolderSlot {
  enum State { Free, Writing, Registered, Taken };
  std::atomic<int> state{Free};
  bool withContents = false;
  char path[4096];
};

constexpr size_t kMaxFolders = 64;
std::array<FolderSlot, kMaxFolders> registeredFolders;

/// 0 until a handler starts removing the folders, 1 while it does, 2 after.
std::atomic<int> removal{0};

/// Whether installSignalHandlers has run.
std::atomic<bool> handlersInstalled{false};

/// The interrupt signals, and the handlers LLVM installed for them.
constexpr std::array<int, 5> kInterruptSignals = {SIGHUP, SIGINT, SIGTERM,
                                                 SIGUSR2, SIGPIPE};
std::array<struct sigaction, kInterruptSignals.size()> llvmHandlers;

/// Deepest folder level walked; outputs nest a few levels.
constexpr int kMaxDepth = 32;

/// Removes `name` in the folder `parent`: a file, or a folder with all it
/// holds.
void removeEntry(int parent, const char *name, int depth) {
  if (::unlinkat(parent, name, 0) == 0 || (errno != EISDIR && errno != EPERM))
    return;
  int folder = ::openat(parent, name,
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (folder < 0)
    return;
  // Entries removed while the folder is read may hide others: read it
  // again until a pass finds nothing.
  for (bool removed = true; removed && depth < kMaxDepth;) {
    removed = false;
    alignas(8) char buffer[2048];
    if (::lseek(folder, 0, SEEK_SET) != 0)
      break;
    for (;;) {
      long bytes = ::syscall(SYS_getdents64, folder, buffer, sizeof(buffer));
      if (bytes <= 0)
        break;
      for (long at = 0; at < bytes;) {
        // struct linux_dirent64: inode, offset, record length, type, name.
        unsigned short length;
        std::memcpy(&length, buffer + at + 16, sizeof(length));
        const char *entry = buffer + at + 19;
        at += length;
        if (std::strcmp(entry, ".") == 0 || std::strcmp(entry, "..") == 0)
          continue;
        removeEntry(folder, entry, depth + 1);
        removed = true;
      }
    }
  }
  ::close(folder);
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

/// Removes the folder `path` and all it holds. Other threads may still be
/// writing into it, so it is first renamed away (its last six characters,
/// the random part of a temporary's name, become "remove": the next run's
/// sweep still knows it): files they create after that fail, rather than
/// land in a folder being emptied.
void removeTree(const char *path) {
  char doomed[4096];
  size_t length = std::strlen(path);
  if (length >= 6 && length < sizeof(doomed)) {
    std::memcpy(doomed, path, length + 1);
    std::memcpy(doomed + length - 6, "remove", 6);
    if (::rename(path, doomed) == 0)
      path = doomed;
  }
  removeEntry(AT_FDCWD, path, 0);
}

/// Removes the folders registered with their contents, then the empty ones
/// (parents made for them): as many passes as there are, since a parent
/// empties only once its child is gone.
void removeRegisteredFolders() {
  for (FolderSlot &slot : registeredFolders) {
    int registered = FolderSlot::Registered;
    if (slot.withContents &&
        slot.state.compare_exchange_strong(registered, FolderSlot::Taken))
      removeTree(slot.path);
  }
  for (size_t pass = 0; pass < kMaxFolders; ++pass) {
    bool removed = false;
    for (FolderSlot &slot : registeredFolders)
      if (slot.state.load() == FolderSlot::Registered &&
          ::rmdir(slot.path) == 0) {
        slot.state = FolderSlot::Taken;
        removed = true;
      }
    if (!removed)
      break;
  }
}

/// Removes the registered folders, then runs LLVM's handler, which removes
/// the registered files and ends the process by the signal.
void handleInterrupt(int signal, siginfo_t *info, void *context) {
  int savedErrno = errno;
  // One thread removes; a signal delivered to another thread meanwhile
  // waits for it, rather than end the process halfway. (On the removing
  // thread, the handler's mask holds every interrupt signal back.)
  int idle = 0;
  if (removal.compare_exchange_strong(idle, 1)) {
    removeRegisteredFolders();
    removal = 2;
  } else {
    while (removal.load() != 2) {
      struct timespec pause = {0, 1000000};
      ::nanosleep(&pause, nullptr);
    }
  }
  errno = savedErrno;
  for (size_t i = 0; i < kInterruptSignals.size(); ++i) {
    if (kInterruptSignals[i] != signal)
      continue;
    const struct sigaction &next = llvmHandlers[i];
    if (next.sa_flags & SA_SIGINFO)
      return next.sa_sigaction(signal, info, context);
    if (next.sa_handler != SIG_DFL && next.sa_handler != SIG_IGN)
      return next.sa_handler(signal);
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

} // namespace

void ucp::installSignalHandlers(const char *argv0) {
  llvm::SmallVector<int> ignored;
  for (int signal : kInterruptSignals) {
    struct sigaction action;
    if (sigaction(signal, nullptr, &action) == 0 &&
        action.sa_handler == SIG_IGN)
      ignored.push_back(signal);
  }
  // Installs LLVM's handlers for every signal, once per process.
  llvm::sys::PrintStackTraceOnErrorSignal(argv0);
  for (size_t i = 0; i < kInterruptSignals.size(); ++i) {
    int signal = kInterruptSignals[i];
    if (llvm::is_contained(ignored, signal)) {
      std::signal(signal, SIG_IGN);
      continue;
    }
    struct sigaction ours = {};
    ours.sa_sigaction = handleInterrupt;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    // Another interrupt (timeout's second SIGTERM, a SIGPIPE from a reader
    // that was killed too) waits until the folders are gone.
    sigemptyset(&ours.sa_mask);
    for (int other : kInterruptSignals)
      sigaddset(&ours.sa_mask, other);
    sigaction(signal, &ours, &llvmHandlers[i]);
  }
  handlersInstalled = true;
}

bool ucp::isRemovedOnSignal(llvm::StringRef path) {
  llvm::SmallString<256> absolute(path);
  if (!handlersInstalled || llvm::sys::fs::make_absolute(absolute))
    return false;
  for (const FolderSlot &slot : registeredFolders) {
    if (slot.state.load() != FolderSlot::Registered || !slot.withContents)
      continue;
    llvm::StringRef folder(slot.path);
    if (absolute.str().starts_with(folder) &&
        absolute.size() > folder.size() && absolute[folder.size()] == '/')
      return true;
  }
  return false;
}

void ucp::removeFolderOnSignal(llvm::StringRef path, bool withContents) {
  llvm::SmallString<256> absolute(path);
  if (llvm::sys::fs::make_absolute(absolute))
    return;
  // Once a handler runs, the table stays as it is. A path too long for a
  // slot, or a full table, leaves the folder to the next run's sweep.
  if (removal.load() != 0 ||
      absolute.size() >= sizeof(registeredFolders[0].path))
    return;
  for (FolderSlot &slot : registeredFolders) {
    int free = FolderSlot::Free;
    if (!slot.state.compare_exchange_strong(free, FolderSlot::Writing))
      continue;
    slot.withContents = withContents;
    std::memcpy(slot.path, absolute.c_str(), absolute.size() + 1);
    slot.state = FolderSlot::Registered;
    return;
  }
}

void ucp::dontRemoveFolderOnSignal(llvm::StringRef path) {
  llvm::SmallString<256> absolute(path);
  if (llvm::sys::fs::make_absolute(absolute))
    return;
  for (FolderSlot &slot : registeredFolders) {
    if (slot.state.load() != FolderSlot::Registered || absolute != slot.path)
      continue;
    // Freed for reuse only while no handler reads the table.
    int registered = FolderSlot::Registered;
    if (removal.load() == 0)
      slot.state.compare_exchange_strong(registered, FolderSlot::Free);
  }
}

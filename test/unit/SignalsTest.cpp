//===- SignalsTest.cpp - Signal handlers of the tools ---------------------===//
//
// With installSignalHandlers, a signal the process started with ignored
// (a hang-up under nohup) leaves the run and its unfinished outputs alone,
// while one that is not ignored removes them and ends the process.
//
//===----------------------------------------------------------------------===//

#include "ucp/Support/Signals.h"
#include "ucp/Formats/Safetensors/Safetensors.h"
#include "ucp/Support/OutputFile.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <csignal>
#include <unistd.h>

using namespace ucp;
namespace fs = llvm::sys::fs;

namespace {

/// The folder a death test's process writes in: named after the test
/// process, which is the parent of the death test's.
std::string getScratchFolder(int testProcess) {
  return testing::TempDir() + "ucp-signals-test-" + std::to_string(testProcess);
}

/// In a death test's process: installs the handlers, starts an output file
/// in a fresh folder, raises `signal` and exits with 0 if the run went on
/// with its temporary file in place, 1 if the file is gone, 2 on a set-up
/// error.
[[noreturn]] void raiseWhileWriting(int signal) {
  installSignalHandlers("ucp-unit-tests");
  std::string folder = getScratchFolder(getppid());
  if (fs::create_directories(folder))
    std::_Exit(2);
  auto writer = SafetensorsWriter::create(folder + "/out.safetensors",
                                          {{"w", DType::F32, {4}}});
  if (!writer)
    std::_Exit(2);
  auto countFiles = [&] {
    int files = 0;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; it != end && !ec;
         it.increment(ec))
      ++files;
    return files;
  };
  if (countFiles() != 1)
    std::_Exit(2);
  std::raise(signal);
  std::_Exit(countFiles() == 1 ? 0 : 1);
}

TEST(SignalsDeathTest, IgnoredHangUpLeavesTheRunAlone) {
  // A fresh process, as a tool starts: nothing has installed handlers yet.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::signal(SIGHUP, SIG_IGN);
        raiseWhileWriting(SIGHUP);
      },
      testing::ExitedWithCode(0), "");
  fs::remove_directories(getScratchFolder(getpid()));
}

/// Counts what `folder` holds, at any depth; -1 when it cannot be read.
int countEntries(const std::string &folder) {
  int entries = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; it != end && !ec;
       it.increment(ec))
    ++entries;
  return ec ? -1 : entries;
}

/// In a death test's process: installs the handlers, starts an output
/// folder two new levels down in a fresh folder, fills it with files and a
/// nested folder as the DeepSpeed writers do, then raises `signal`. Exits
/// with 2 on a set-up error, and with 0 if the run went on.
[[noreturn]] void raiseWhileWritingFolder(int signal) {
  installSignalHandlers("ucp-unit-tests");
  std::string scratch = getScratchFolder(getppid());
  if (fs::create_directories(scratch))
    std::_Exit(2);
  auto folder = OutputFolder::create(scratch + "/made/parent/out");
  if (!folder)
    std::_Exit(2);
  std::string temporary = folder->get()->getTemporaryPath().str();
  if (fs::create_directories(temporary + "/zero/embed.weight"))
    std::_Exit(2);
  for (const char *file : {"/zero/embed.weight/fp32.pt",
                           "/zero/embed.weight/exp_avg.pt", "/mp_rank_00.pt"}) {
    llvm::Error error =
        writeOutputFile(temporary + file, [](llvm::raw_ostream &os) {
          os << std::string(1 << 16, 'x');
          return llvm::Error::success();
        });
    if (error) {
      llvm::consumeError(std::move(error));
      std::_Exit(2);
    }
  }
  if (countEntries(scratch) < 6)
    std::_Exit(2);
  std::raise(signal);
  std::_Exit(0);
}

TEST(SignalsDeathTest, InterruptRemovesTheUnfinishedFolderAndItsParents) {
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(raiseWhileWritingFolder(signal),
                testing::KilledBySignal(signal), "");
    // The temporary folder, what it held and the parents made for it.
    EXPECT_EQ(countEntries(getScratchFolder(getpid())), 0) << signal;
    fs::remove_directories(getScratchFolder(getpid()));
  }
}

/// In a death test's process: whether isRemovedOnSignal knows the files
/// of a registered folder from their neighbours. Exits with 0 if so, with
/// the number of the first wrong answer otherwise.
[[noreturn]] void checkFilesOfRegisteredFolders() {
  std::string scratch = getScratchFolder(getppid()) + "/out";
  // Without the handlers nothing is removed, so nothing counts.
  removeFolderOnSignal(scratch, /*withContents=*/true);
  if (isRemovedOnSignal(scratch + "/a.pt"))
    std::_Exit(1);
  installSignalHandlers("ucp-unit-tests");
  if (!isRemovedOnSignal(scratch + "/a.pt") ||
      !isRemovedOnSignal(scratch + "/zero/w/fp32.pt"))
    std::_Exit(2);
  // The folder itself, a sibling sharing its name's start, and a folder
  // registered without its contents are not.
  if (isRemovedOnSignal(scratch) || isRemovedOnSignal(scratch + "2/a.pt"))
    std::_Exit(3);
  removeFolderOnSignal(scratch + "-parent", /*withContents=*/false);
  if (isRemovedOnSignal(scratch + "-parent/a.pt"))
    std::_Exit(4);
  dontRemoveFolderOnSignal(scratch);
  std::_Exit(isRemovedOnSignal(scratch + "/a.pt") ? 5 : 0);
}

TEST(SignalsDeathTest, FilesOfARegisteredFolderGoWithIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(checkFilesOfRegisteredFolders(), testing::ExitedWithCode(0), "");
}

TEST(SignalsDeathTest, HangUpRemovesUnfinishedOutputsAndEndsTheRun) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(raiseWhileWriting(SIGHUP), testing::KilledBySignal(SIGHUP), "");
  fs::remove_directories(getScratchFolder(getpid()));
}

} // namespace

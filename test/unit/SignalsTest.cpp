//===- SignalsTest.cpp - Signal handlers of the tools ---------------------===//
//
// With installSignalHandlers, a signal the process started with ignored
// (a hang-up under nohup) leaves the run and its unfinished outputs alone,
// while one that is not ignored removes them and ends the process.
//
//===----------------------------------------------------------------------===//

#include "ucp/Support/Signals.h"
#include "ucp/Formats/Safetensors/Safetensors.h"

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

TEST(SignalsDeathTest, HangUpRemovesUnfinishedOutputsAndEndsTheRun) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(raiseWhileWriting(SIGHUP), testing::KilledBySignal(SIGHUP), "");
  fs::remove_directories(getScratchFolder(getpid()));
}

} // namespace

//===- GroupOutputsTest.cpp - A job's outputs shared by processes ---------===//

#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/OutputFile.h"

#include "ScratchFolder.h"

#include "gtest/gtest.h"

#include <random>

using namespace ucp;

namespace {

/// The largest load of any process when `bytes` go as `owners` says.
int64_t getLargestLoad(llvm::ArrayRef<int64_t> bytes,
                       llvm::ArrayRef<int> owners, int processes) {
  std::vector<int64_t> load(processes, 0);
  for (size_t i = 0; i < bytes.size(); ++i)
    load[owners[i]] += std::max<int64_t>(bytes[i], 1);
  return *std::max_element(load.begin(), load.end());
}

TEST(DivideByBytes, BalancesRandomSizesLargestFirst) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    int processes = 1 + random() % 9;
    std::vector<int64_t> bytes(random() % 40);
    for (int64_t &size : bytes)
      size = random() % 3 ? random() % 1000 : random() % 1000000;
    std::vector<int> owners = divideByBytes(bytes, processes);
    ASSERT_EQ(owners.size(), bytes.size());
    for (int owner : owners)
      ASSERT_TRUE(owner >= 0 && owner < processes);
    // Every process computes the same division.
    EXPECT_EQ(owners, divideByBytes(bytes, processes));
    // List scheduling's bound: no process holds more than an even share
    // plus the largest output.
    int64_t total = 0, largest = 0;
    for (int64_t size : bytes) {
      total += std::max<int64_t>(size, 1);
      largest = std::max<int64_t>(largest, std::max<int64_t>(size, 1));
    }
    EXPECT_LE(getLargestLoad(bytes, owners, processes),
              (total + processes - 1) / processes + largest);
    // With as many outputs as processes, each has one at least.
    if (bytes.size() >= size_t(processes)) {
      for (int process = 0; process < processes; ++process)
        EXPECT_NE(std::count(owners.begin(), owners.end(), process), 0)
            << "process " << process << " of " << processes;
    }
  }
}

TEST(DivideByBytes, GivesTheLargestOutputsToDifferentProcesses) {
  // 10 and 9 to processes 0 and 1; then 5 to 1 (9 < 10), 4 to 0 (10 <
  // 14), and 1 to 0 (14 each: the lower process).
  EXPECT_EQ(divideByBytes({1, 9, 4, 10, 5}, 2),
            (std::vector<int>{0, 1, 0, 0, 1}));
  EXPECT_EQ(divideByBytes({3, 3, 3}, 1), (std::vector<int>{0, 0, 0}));
}

TEST(DivideByBytes, KeepsPinnedOutputsAndCountsTheirBytesFirst) {
  // 3 is pinned to process 0 and 10 to process 1: 9 goes to process 0
  // (3 < 10), 5 to process 1 (10 < 12), 4 to process 0 (12 < 15).
  EXPECT_EQ(divideByBytes({3, 9, 4, 10, 5}, 2, {0, -1, -1, 1, -1}),
            (std::vector<int>{0, 0, 0, 1, 1}));
  // A pin past the processes is divided as any output.
  EXPECT_EQ(divideByBytes({1, 9}, 2, {5, -1}), divideByBytes({1, 9}, 2));
}

/// A group of one process, to run the collective path on.
class SoloGroup : public ProcessGroup {
public:
  int getProcess() const override { return 0; }
  int getProcessCount() const override { return 1; }
  bool holdsSource(int64_t) const override { return true; }
  bool holdsTarget(int64_t) const override { return true; }
  llvm::Error agree(llvm::Error local) override {
    ++agreements;
    return local;
  }
  llvm::Error reduce(std::vector<int64_t> &, Reduction) override {
    return llvm::Error::success();
  }
  llvm::Error broadcast(llvm::MutableArrayRef<char>, int) override {
    return llvm::Error::success();
  }
  llvm::Error execute(llvm::ArrayRef<ProgramRun>) override {
    return makeError("no programs here");
  }
  int64_t getBatchBytes() const override { return 1; }
  int agreements = 0;
};

/// The single-process commit of an OutputFolder at `path`.
llvm::Error commitFolder(llvm::StringRef path,
                         llvm::function_ref<llvm::Error(llvm::StringRef)>
                             write) {
  llvm::Expected<std::unique_ptr<OutputFolder>> folder =
      OutputFolder::create(path);
  if (!folder)
    return folder.takeError();
  if (llvm::Error error = write((*folder)->getTemporaryPath()))
    return error;
  return (*folder)->commit();
}

TEST(WriteFolderTogether, CommitsWhatTheProcessesWrote) {
  ucp::testing::ScratchFolder scratch;
  std::string out = scratch.file("out");
  SoloGroup group;
  OutputShare share;
  share.add("a", 10);
  share.divide(&group);
  EXPECT_TRUE(share.isMine(0));
  GroupFingerprint plan;
  share.addTo(plan);
  llvm::Error error = writeFolderTogether(
      &group, out, plan,
      [&](auto write) { return commitFolder(out, write); },
      [&](llvm::StringRef staged) {
        return writeOutputFile((staged + "/a").str(), [](auto &os) {
          os << "bytes";
          return llvm::Error::success();
        });
      },
      /*durable=*/true);
  ASSERT_FALSE(error) << llvm::toString(std::move(error));
  // The plan, the writes and the commit were agreed on.
  EXPECT_EQ(group.agreements, 3);
  EXPECT_TRUE(llvm::sys::fs::exists(out + "/a"));
}

TEST(WriteFolderTogether, LeavesNothingWhenAWriteFails) {
  ucp::testing::ScratchFolder scratch;
  std::string out = scratch.file("out");
  SoloGroup group;
  std::string staged;
  llvm::Error error = writeFolderTogether(
      &group, out, GroupFingerprint(),
      [&](auto write) { return commitFolder(out, write); },
      [&](llvm::StringRef folder) {
        staged = folder.str();
        return makeError(folder + "/a: the disk is full");
      },
      /*durable=*/false);
  ASSERT_TRUE(bool(error));
  // The message names the output, not the staged folder.
  EXPECT_EQ(llvm::toString(std::move(error)), out + "/a: the disk is full");
  EXPECT_FALSE(llvm::sys::fs::exists(out));
  EXPECT_FALSE(llvm::sys::fs::exists(staged));
  EXPECT_EQ(scratch.list(), std::vector<std::string>());
}

TEST(WriteFolderTogether, FailsEveryProcessWhenTheFolderCannotBeMade) {
  ucp::testing::ScratchFolder scratch;
  std::string out = scratch.file("out");
  ASSERT_FALSE(llvm::sys::fs::create_directory(out)); // It exists.
  SoloGroup group;
  bool wrote = false;
  llvm::Error error = writeFolderTogether(
      &group, out, GroupFingerprint(),
      [&](auto write) { return commitFolder(out, write); },
      [&](llvm::StringRef) {
        wrote = true;
        return llvm::Error::success();
      },
      /*durable=*/false);
  EXPECT_TRUE(bool(error));
  llvm::consumeError(std::move(error));
  EXPECT_FALSE(wrote);
  // The plan and process 0's failure to stage were agreed on.
  EXPECT_EQ(group.agreements, 2);
}

} // namespace

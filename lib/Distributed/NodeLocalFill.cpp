//===- NodeLocalFill.cpp - Bytes of a node-local folder, peer to peer -----===//
//
// NodeLocalFolder::fill as a transfer on the group's exchange: source rank
// i is file i, held by its holder; target rank p * files + i is process
// p's replica of it, staged in memory batch by batch. Each range a process
// needs is a byte copy between the two, so the exchange sends it straight
// from the holder's mapping into the receiver's staging buffer, in batches
// of at most the group's batch bytes; the receiver then writes it into its
// replica.
//
//===----------------------------------------------------------------------===//

#include "ucp/Distributed/NodeLocalFolder.h"
#include "ucp/Plan/CopyProgram.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/MemoryBuffer.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace ucp;
namespace fs = llvm::sys::fs;

namespace {

/// One range a process needs, by file number.
struct Need {
  int process;
  int64_t file, offset, bytes;
};

/// Where a copy of a batch lands: `bytes` at `staged` of the target's
/// staging buffer go to `offset` of its replica.
struct Landing {
  int64_t target, staged, offset, bytes;
};

/// One exchange: the byte copies, each into its target's staging buffer
/// (the receiver writes them into its replicas after), and where they go.
struct Batch {
  CopyProgram program;
  std::vector<Landing> landings;
};

/// The byte copies of `needs`, in batches of at most `batchBytes` (a range
/// longer than that is cut).
std::vector<Batch> makeBatches(llvm::ArrayRef<Need> needs,
                               llvm::ArrayRef<int64_t> sizes,
                               int64_t batchBytes) {
  int64_t files = sizes.size();
  std::vector<Batch> batches(1);
  std::map<std::pair<int64_t, int64_t>, BufferPairCopies> pairs;
  auto close = [&] {
    CopyProgram &program = batches.back().program;
    program.pairsSorted = true;
    for (auto &[key, pair] : pairs) {
      program.sourceElements[pair.sourceBuffer] = sizes[pair.sourceBuffer];
      program.pairs.push_back(std::move(pair));
    }
    pairs.clear();
  };
  int64_t inBatch = 0;
  for (const Need &need : needs)
    for (int64_t at = 0; at < need.bytes;) {
      if (inBatch == batchBytes) {
        close();
        batches.emplace_back();
        inBatch = 0;
      }
      int64_t bytes =
          std::min({need.bytes - at, kMaxCopyElements, batchBytes - inBatch});
      int64_t target = need.process * files + need.file;
      int64_t &staged = batches.back().program.targetElements[target];
      BufferPairCopies &pair = pairs[{need.file, target}];
      pair.sourceBuffer = need.file;
      pair.targetBuffer = target;
      StridedCopy copy;
      copy.shape = {bytes};
      copy.source = {need.offset + at, {1}};
      copy.target = {staged, {1}};
      pair.copies.push_back(std::move(copy));
      batches.back().landings.push_back(
          {target, staged, need.offset + at, bytes});
      staged += bytes;
      inBatch += bytes;
      at += bytes;
    }
  close();
  if (batches.back().program.pairs.empty())
    batches.pop_back();
  return batches;
}

} // namespace

llvm::Error NodeLocalFolder::fill(llvm::ArrayRef<FileRange> needs) {
  std::vector<std::string> names;
  std::vector<int64_t> fileSizes;
  std::map<std::string, int64_t> numbers;
  for (const auto &[name, size] : sizes) {
    numbers[name] = names.size();
    names.push_back(name);
    fileSizes.push_back(size);
  }
  // This process's ranges, checked, as (file, begin, end); then as three
  // words each (file, offset, bytes).
  std::vector<std::array<int64_t, 3>> wanted;
  std::string own;
  llvm::Error local = llvm::Error::success();
  for (const FileRange &range : needs) {
    auto found = numbers.find(range.file);
    if (found == numbers.end()) {
      local = makeError("'" + range.file + "' is not a file of '" + folderPath +
                        "'");
      break;
    }
    if (range.offset < 0 || range.bytes < 0 ||
        range.offset > fileSizes[found->second] - range.bytes) {
      local = makeError("bytes " + llvm::Twine(range.offset) + " to " +
                        llvm::Twine(range.offset + range.bytes) + " of '" +
                        range.file + "' are past its " +
                        llvm::Twine(fileSizes[found->second]) + " bytes");
      break;
    }
    if (!holds(range.file) && range.bytes > 0)
      wanted.push_back(
          {found->second, range.offset, range.offset + range.bytes});
  }
  // Ranges named twice, or overlapping, travel once.
  llvm::sort(wanted);
  std::vector<std::array<int64_t, 3>> merged;
  for (const std::array<int64_t, 3> &range : wanted)
    if (!merged.empty() && merged.back()[0] == range[0] &&
        merged.back()[2] >= range[1])
      merged.back()[2] = std::max(merged.back()[2], range[2]);
    else
      merged.push_back(range);
  for (auto [file, begin, end] : merged)
    for (int64_t word : {file, begin, end - begin})
      own.append(reinterpret_cast<const char *>(&word), sizeof word);
  if (llvm::Error error = group->agree(std::move(local)))
    return error;
  llvm::Expected<std::vector<std::string>> all = group->allGather(own);
  if (!all)
    return all.takeError();
  std::vector<Need> everyNeed;
  for (auto [process, words] : llvm::enumerate(*all))
    for (size_t at = 0; at + 3 * sizeof(int64_t) <= words.size();
         at += 3 * sizeof(int64_t)) {
      Need need{static_cast<int>(process), 0, 0, 0};
      std::memcpy(&need.file, words.data() + at, sizeof(int64_t));
      std::memcpy(&need.offset, words.data() + at + 8, sizeof(int64_t));
      std::memcpy(&need.bytes, words.data() + at + 16, sizeof(int64_t));
      everyNeed.push_back(need);
    }
  std::vector<Batch> batches =
      makeBatches(everyNeed, fileSizes, group->getBatchBytes());
  if (batches.empty())
    return llvm::Error::success();

  // The transfer's group: file i on its holder, replica p * files + i on p.
  int processes = group->getProcessCount(), me = group->getProcess();
  ProcessOwnership ownership;
  for (const std::string &name : names)
    ownership.sourceProcesses.push_back(getHolder(name));
  for (int process = 0; process < processes; ++process)
    for (size_t file = 0; file < names.size(); ++file)
      ownership.targetProcesses.push_back(process);
  llvm::Expected<std::unique_ptr<MpiGroup>> transfer =
      MpiGroup::create(comm, std::move(ownership), options);
  if (!transfer)
    return transfer.takeError();

  // The files this process serves, mapped once; the copies into its
  // replicas are staged in memory (one buffer, reused) and written with
  // pwrite: large sequential writes rather than a fault per page of a
  // shared mapping of a sparse file.
  int64_t files = names.size();
  std::map<int64_t, std::unique_ptr<llvm::MemoryBuffer>> served;
  std::map<int64_t, int> replicas;
  auto closeReplicas = llvm::make_scope_exit([&] {
    for (auto &[file, fd] : replicas)
      ::close(fd);
  });
  std::vector<char> staging;
  auto bind = [&](const CopyProgram &program,
                  ProgramBuffers &buffers) -> llvm::Error {
    for (const auto &[file, elements] : program.sourceElements) {
      if (getHolder(names[file]) != me)
        continue;
      std::unique_ptr<llvm::MemoryBuffer> &buffer = served[file];
      if (!buffer) {
        auto opened = llvm::MemoryBuffer::getFile(
            folderPath + "/" + names[file], false, false);
        if (!opened)
          return makeError("cannot read '" + folderPath + "/" + names[file] +
                           "': " + opened.getError().message());
        buffer = std::move(*opened);
      }
      buffers.sources[file] = buffer->getBufferStart();
    }
    int64_t total = 0;
    for (const auto &[target, elements] : program.targetElements)
      total += target / files == me ? elements : 0;
    if (int64_t(staging.size()) < total)
      staging.resize(total);
    total = 0;
    for (const auto &[target, elements] : program.targetElements)
      if (target / files == me) {
        buffers.targets[target] = staging.data() + total;
        total += elements;
      }
    return llvm::Error::success();
  };
  // Writes the copies of `batch` into this process's replicas.
  auto land = [&](const Batch &batch,
                  const ProgramBuffers &buffers) -> llvm::Error {
    for (const Landing &landing : batch.landings) {
      if (landing.target / files != me)
        continue;
      int64_t file = landing.target % files;
      std::string path = localPath + "/" + names[file];
      if (!replicas.count(file)) {
        int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0)
          return makeError("cannot open the replica '" + path +
                           "': " + std::strerror(errno));
        replicas[file] = fd;
      }
      const char *from =
          static_cast<const char *>(buffers.targets.at(landing.target)) +
          landing.staged;
      for (int64_t done = 0; done < landing.bytes;) {
        ssize_t wrote = ::pwrite(replicas[file], from + done,
                                 landing.bytes - done, landing.offset + done);
        if (wrote <= 0)
          return makeError("cannot write the replica '" + path +
                           "': " + std::strerror(errno));
        done += wrote;
      }
      bytesReceived += landing.bytes;
    }
    return llvm::Error::success();
  };
  for (const Batch &batch : batches) {
    ProgramRun run;
    run.program = &batch.program;
    run.type = DType::U8;
    run.name = "node-local files";
    if (llvm::Error error =
            (*transfer)->agree(bind(batch.program, run.buffers)))
      return error;
    if (llvm::Error error = (*transfer)->execute(run))
      return error;
    if (llvm::Error error = (*transfer)->agree(land(batch, run.buffers)))
      return error;
  }
  return llvm::Error::success();
}

//===- NodeLocalFill.cpp - Bytes of a node-local folder, peer to peer -----===//
//
// NodeLocalFolder::fill as a transfer on the group's exchange: source rank
// i is file i, held by its holder; target rank p * files + i is process
// p's replica of it. Each range a process needs is a byte copy between the
// two, so the exchange sends it straight from the holder's mapping into
// the replica's, in batches of at most the group's batch bytes.
//
//===----------------------------------------------------------------------===//

#include "ucp/Distributed/NodeLocalFolder.h"
#include "ucp/Plan/CopyProgram.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace ucp;
namespace fs = llvm::sys::fs;

namespace {

/// One range a process needs, by file number.
struct Need {
  int process;
  int64_t file, offset, bytes;
};

/// The byte copies of `needs`, in batches of at most `batchBytes` (a range
/// longer than that is a batch, or several, of its own).
std::vector<CopyProgram> makeBatches(llvm::ArrayRef<Need> needs,
                                     llvm::ArrayRef<int64_t> sizes,
                                     int64_t batchBytes) {
  int64_t files = sizes.size();
  std::vector<std::map<std::pair<int64_t, int64_t>, BufferPairCopies>> pairs(1);
  int64_t inBatch = 0;
  for (const Need &need : needs)
    for (int64_t at = 0; at < need.bytes;) {
      int64_t bytes = std::min({need.bytes - at, kMaxCopyElements,
                                std::max<int64_t>(batchBytes - inBatch, 1)});
      if (inBatch > 0 && inBatch + bytes > batchBytes) {
        pairs.emplace_back();
        inBatch = 0;
        continue;
      }
      int64_t target = need.process * files + need.file;
      BufferPairCopies &pair = pairs.back()[{need.file, target}];
      pair.sourceBuffer = need.file;
      pair.targetBuffer = target;
      StridedCopy copy;
      copy.shape = {bytes};
      copy.source = {need.offset + at, {1}};
      copy.target = {need.offset + at, {1}};
      pair.copies.push_back(std::move(copy));
      inBatch += bytes;
      at += bytes;
    }
  std::vector<CopyProgram> batches;
  for (auto &batch : pairs) {
    if (batch.empty())
      continue;
    CopyProgram &program = batches.emplace_back();
    program.pairsSorted = true;
    for (auto &[key, pair] : batch) {
      program.sourceElements[pair.sourceBuffer] = sizes[pair.sourceBuffer];
      program.targetElements[pair.targetBuffer] = sizes[pair.sourceBuffer];
      program.pairs.push_back(std::move(pair));
    }
  }
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
  // This process's ranges, checked, as three words each.
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
    if (holds(range.file) || range.bytes == 0)
      continue;
    for (int64_t word : {found->second, range.offset, range.bytes})
      own.append(reinterpret_cast<const char *>(&word), sizeof word);
  }
  if (llvm::Error error = group->agree(std::move(local)))
    return error;
  llvm::Expected<std::vector<std::string>> all = gather(own);
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
  std::vector<CopyProgram> batches =
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

  // The files this process serves, and its replicas, mapped once.
  std::map<int64_t, std::unique_ptr<llvm::MemoryBuffer>> served;
  std::map<int64_t, std::unique_ptr<fs::mapped_file_region>> replicas;
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
    for (const auto &[target, elements] : program.targetElements) {
      if (target / static_cast<int64_t>(names.size()) != me)
        continue;
      int64_t file = target % static_cast<int64_t>(names.size());
      std::unique_ptr<fs::mapped_file_region> &region = replicas[file];
      if (!region) {
        std::string path = localPath + "/" + names[file];
        llvm::Expected<fs::file_t> fd = fs::openNativeFileForReadWrite(
            path, fs::CD_OpenExisting, fs::OF_None);
        if (!fd)
          return fd.takeError();
        std::error_code ec;
        region = std::make_unique<fs::mapped_file_region>(
            *fd, fs::mapped_file_region::readwrite, fileSizes[file], 0, ec);
        fs::closeFile(*fd);
        if (ec)
          return makeError("cannot map the replica '" + path +
                           "': " + ec.message());
      }
      buffers.targets[target] = region->data();
    }
    return llvm::Error::success();
  };
  for (const CopyProgram &program : batches) {
    ProgramRun run;
    run.program = &program;
    run.type = DType::U8;
    run.name = "node-local files";
    if (llvm::Error error = (*transfer)->agree(bind(program, run.buffers)))
      return error;
    if (llvm::Error error = (*transfer)->execute(run))
      return error;
    for (const BufferPairCopies &pair : program.pairs)
      if (pair.targetBuffer / static_cast<int64_t>(names.size()) == me)
        for (const StridedCopy &copy : pair.copies)
          bytesReceived += copy.shape[0];
  }
  return llvm::Error::success();
}

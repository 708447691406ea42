//===- ucp-node-local.cpp - A folder each MPI process holds a part of -----===//
//
//   mpirun -np P ucp-node-local FOLDER REFERENCE [BATCH_BYTES]
//
// Opens FOLDER (its "%p" replaced by this process's number, so that the
// processes of one machine each see a folder of their own) as a
// NodeLocalFolder, then fills, on process p, the holes of every replica
// whose number (in file order, then record order) has p's parity: ranges
// other processes hold, that differ from process to process. Checks every
// byte of every file of the local folder against REFERENCE (the whole
// folder): a held file, a replica's skeleton and its filled holes must be
// the reference's bytes, the holes left alone zeros. Process 0 prints
// "checked F files" once every process found its own right; each process
// prints what it holds and received; errors go to stderr, exit 1.
//
//===----------------------------------------------------------------------===//

#include "ucp/Distributed/NodeLocalFolder.h"
#include "ucp/Formats/Torch/TorchArchive.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdio>
#include <cstdlib>

using namespace ucp;

/// The first byte of `name` in the local folder that is not what it
/// should be, as an error; `filled` are the holes this process asked for.
static llvm::Error
checkFile(const NodeLocalFolder &local, llvm::StringRef name,
          llvm::StringRef reference,
          const std::vector<std::pair<int64_t, int64_t>> &filled) {
  auto mine = llvm::MemoryBuffer::getFile(local.getPath() + "/" + name);
  auto theirs = llvm::MemoryBuffer::getFile(reference + "/" + name);
  if (!mine || !theirs)
    return llvm::createStringError("cannot read '" + name + "'");
  // The reference's bytes, with zeros where a replica's holes stay.
  std::string want = (*theirs)->getBuffer().str();
  if (!local.holds(name))
    for (auto [offset, bytes] : getStoragePayloads(**theirs, kReplicaHoleBytes))
      if (!llvm::is_contained(filled, std::make_pair(offset, bytes)))
        std::fill_n(want.begin() + offset, bytes, '\0');
  llvm::StringRef got = (*mine)->getBuffer();
  if (got.size() != want.size())
    return llvm::createStringError("'" + name + "' has " +
                                   std::to_string(got.size()) + " bytes");
  for (size_t at = 0; at < got.size(); ++at)
    if (got[at] != want[at])
      return llvm::createStringError("'" + name + "' differs at byte " +
                                     std::to_string(at));
  return llvm::Error::success();
}

static int fail(llvm::Error error) {
  std::fprintf(stderr, "%s\n", llvm::toString(std::move(error)).c_str());
  return 1;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  if (argc < 3) {
    std::fprintf(stderr, "usage: ucp-node-local FOLDER REFERENCE [BATCH]\n");
    return 2;
  }
  int process = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  std::string folder = argv[1];
  for (size_t at; (at = folder.find("%p")) != std::string::npos;)
    folder.replace(at, 2, std::to_string(process));
  MpiGroupOptions options;
  options.timeoutSeconds = 60;
  if (argc > 3)
    options.batchBytes = std::atoll(argv[3]);
  int status = 0;
  {
    auto local = NodeLocalFolder::open(
        MPI_COMM_WORLD, folder, options, [](const llvm::MemoryBuffer &file) {
          return getStoragePayloads(file, kReplicaHoleBytes);
        });
    if (!local) {
      status = fail(local.takeError());
      MPI_Finalize();
      return status;
    }
    // Every other hole, by this process's parity, of the files not held.
    std::vector<FileRange> needs;
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> filled;
    size_t number = 0, held = 0;
    for (const auto &[name, size] : (*local)->getFiles()) {
      held += (*local)->holds(name);
      auto replica =
          llvm::MemoryBuffer::getFile((*local)->getPath() + "/" + name);
      if (!replica)
        return fail(llvm::createStringError("cannot read " + name));
      for (auto [offset, bytes] :
           getStoragePayloads(**replica, kReplicaHoleBytes))
        if (number++ % 2 == size_t(process % 2) && !(*local)->holds(name)) {
          needs.push_back({name, offset, bytes});
          filled[name].push_back({offset, bytes});
        }
    }
    if (llvm::Error error = (*local)->fill(needs))
      return fail(std::move(error));
    std::printf("process %d: holds %zu of %zu files, received %lld bytes\n",
                process, held, (*local)->getFiles().size(),
                static_cast<long long>((*local)->getBytesReceived()));
    int wrong = 0;
    for (const auto &[name, size] : (*local)->getFiles())
      if (llvm::Error error = checkFile(**local, name, argv[2], filled[name])) {
        wrong = 1;
        fail(std::move(error));
        break;
      }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (process == 0 && !wrong)
      std::printf("checked %zu files\n", (*local)->getFiles().size());
    status = wrong;
  }
  MPI_Finalize();
  return status;
}

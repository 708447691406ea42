//===- NodeLocalFolder.h - A folder each process holds a part of -*- C++
//-*-===//
//
// The node-local storage model of a job across processes: a checkpoint
// folder of which each process holds only some files (those its node's
// ranks saved, on the node's own disk), the same path on every process.
// Every process gets a local folder of its own that looks whole: the files
// it holds linked, and for each other file a sparse replica of the same
// size holding every byte but the payloads of its large records (a
// torch.save archive's storages), with holes there. A reader opens that
// folder unchanged: names, sizes, zip directories and pickles are all
// there. fill() then brings, from their holders through the group's
// exchange, the byte ranges each process will read, so that only the
// bytes a process's outputs need travel, peer to peer.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DISTRIBUTED_NODELOCALFOLDER_H
#define UCP_DISTRIBUTED_NODELOCALFOLDER_H

#include "ucp/Distributed/MpiTransfer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ucp {

/// Bytes [offset, offset + bytes) of file `file` of a NodeLocalFolder (a
/// name within the folder).
struct FileRange {
  std::string file;
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// Records of at least this many bytes are holes in a replica until
/// filled; smaller ones (scalars, step counts) travel with the skeleton,
/// so that what a reader reads while opening is there.
constexpr int64_t kReplicaHoleBytes = int64_t(64) << 10;

/// The byte ranges, (offset, bytes) in file order, that a replica of
/// `file` leaves as holes: what the format knows a reader reads only when
/// it reads tensors (a torch.save archive's large storages,
/// getStoragePayloads with kReplicaHoleBytes). None: the file is
/// replicated whole, so that every process's reader meets what its
/// holder's would.
using HoleFinder = std::function<std::vector<std::pair<int64_t, int64_t>>(
    const llvm::MemoryBuffer &file)>;

/// A folder that each process of an MPI communicator holds a part of, seen
/// whole through a local folder of each process's own (the file comment).
class NodeLocalFolder {
public:
  /// Collective over `comm`: every process lists the regular files under
  /// `folder` (which must exist; it may be empty; subfolders are listed
  /// too, a file named by its path within `folder`), learns every other's,
  /// and makes its local folder in the system's temporary folder (named
  /// with its process id, so that the folders of processes killed before
  /// they removed theirs are removed here). A file
  /// held by several processes is served by the lowest; one name of two
  /// sizes is an error on every process, naming both. Waits are bounded
  /// by `options`' timeout. `findHoles` says what each replica leaves out.
  static llvm::Expected<std::unique_ptr<NodeLocalFolder>>
  open(MPI_Comm comm, llvm::StringRef folder, const MpiGroupOptions &options,
       HoleFinder findHoles);
  /// Removes the local folder (removeLocalFolder).
  ~NodeLocalFolder();
  /// Removes the local folder, its links and replicas (never the files the
  /// links point to); once.
  void removeLocalFolder();

  /// The local folder, named as `folder` is (its last component), inside
  /// a fresh temporary folder.
  llvm::StringRef getPath() const { return localPath; }
  /// Every file of the folder, by name (its path within the folder), with
  /// its size.
  const std::map<std::string, int64_t> &getFiles() const { return sizes; }
  /// Whether this process holds `name` itself (rather than a replica).
  bool holds(llvm::StringRef name) const;
  /// The process that serves `name` to the others.
  int getHolder(llvm::StringRef name) const;

  /// Collective: each process passes the ranges it will read; those of
  /// files it does not hold arrive from their holders, written into its
  /// replicas (ranges of files it holds are already there). Batches move
  /// at most the group's batch bytes in all. An unknown file or a range
  /// outside its file is an error on every process.
  llvm::Error fill(llvm::ArrayRef<FileRange> needs);
  /// Bytes this process received into its replicas so far.
  int64_t getBytesReceived() const { return bytesReceived; }

private:
  NodeLocalFolder() = default;
  llvm::Error makeLocalFolder(llvm::StringRef folder);
  /// Makes the subfolders of the local folder that `name` lies in.
  llvm::Error makeSubfolders(llvm::StringRef name);
  llvm::Error shareSkeletons(llvm::StringRef folder,
                             const HoleFinder &findHoles);

  MPI_Comm comm = MPI_COMM_NULL;
  MpiGroupOptions options;
  std::unique_ptr<MpiGroup> group;
  std::string folderPath, tempRoot, localPath;
  std::map<std::string, int64_t> sizes;
  std::map<std::string, int> holders;
  std::map<std::string, bool> heldHere;
  /// The subfolders of the local folder made, each after its parent.
  std::vector<std::string> subfolders;
  int64_t bytesReceived = 0;
};

} // namespace ucp

#endif // UCP_DISTRIBUTED_NODELOCALFOLDER_H

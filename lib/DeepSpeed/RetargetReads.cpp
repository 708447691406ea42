//===- RetargetReads.cpp - The source bytes a retarget reads --------------===//
//
// What writing each target file reads, named before any is written (a
// node-local input brings these bytes first). It follows the writers: a
// target file copies the storages its template keeps, and fills each new
// storage from the source fragments of the parameters with elements in
// its partition (every rank of them, which checking their replicas and
// values reads too), the fp32 masters, a source storage, or a frozen
// parameter's shards; layer and expert files are copied whole, or made
// from the masters where the source is a Universal folder.
//
//===----------------------------------------------------------------------===//

#include "JobReads.h"
#include "Retargeter.h"

#include "llvm/Support/FileSystem.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;

void Retargeter::addTargetFileReads(const TargetFile &file,
                                    const TorchFile *source, int64_t d,
                                    int64_t t,
                                    std::vector<FileBytes> &reads) const {
  if (source)
    addCopiedReads(*source, file.document, reads);
  for (const NewStorage &storage : file.storages)
    switch (storage.fill) {
    case NewStorage::Partition:
      for (size_t p : getPartitionParams(storage.group, d, t))
        checkpoint.addStateBytes(p, kOptimizerStates[storage.state], reads);
      break;
    case NewStorage::MasterWeights:
      for (size_t p : getGroupParams(storage.group, t))
        checkpoint.addStateBytes(p, TensorState::Master, reads);
      break;
    case NewStorage::SourceWeights:
      if (source)
        addStorageRead(*source, storage.key, reads);
      break;
    case NewStorage::Frozen:
      checkpoint.addStateBytes(storage.group, TensorState::Weight, reads);
      break;
    case NewStorage::Empty:
      break;
    }
}

Expected<std::vector<FileBytes>> Retargeter::getReads() const {
  std::vector<FileBytes> reads;
  // Model-states files, then optimizer files, each from its template (a
  // Universal folder's optimizer files are templates built in memory).
  for (bool model : {true, false})
    for (const auto &[rank, output] : model ? modelOutputs : tensorOutputs) {
      if (!share.isMine(output))
        continue;
      auto [d, m] = rank;
      Expected<TargetFile> built =
          model ? buildModelStates(d, m) : buildTensorStates(d, m);
      if (!built)
        return built.takeError();
      int64_t from = getTemplateRank(m);
      const TorchFile *source = model ? checkpoint.getModelFiles()[from].get()
                                : checkpoint.isUniversal()
                                    ? nullptr
                                    : &checkpoint.getOptimizerFile(from);
      addTargetFileReads(*built, source, d, m, reads);
    }
  // Layer and expert files: copied, or made from the masters.
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.getParams();
  if (getLayerFileCount() && share.isMine(layerOutput)) {
    if (!checkpoint.isUniversal())
      for (const std::unique_ptr<TorchFile> &file : checkpoint.getLayerFiles())
        addFileRead(file->getBuffer(), reads);
    else
      for (const auto &[layer, indices] : layerParams)
        for (size_t p : indices)
          checkpoint.addStateBytes(p, TensorState::Master, reads);
  }
  if (!isZero3Target() && share.isMine(expertOutput)) {
    if (!checkpoint.isUniversal()) {
      for (const std::vector<std::string> &layer : checkpoint.getExpertFiles())
        for (const std::string &file : layer) {
          uint64_t size = 0;
          if (std::error_code ec = llvm::sys::fs::file_size(file, size))
            return llvm::createFileError(file, ec);
          reads.push_back({file, 0, static_cast<int64_t>(size)});
        }
    } else {
      for (size_t p = 0; p < params.size(); ++p)
        if (params[p].expertLayer)
          checkpoint.addStateBytes(p, TensorState::Master, reads);
    }
  }
  return reads;
}

//===- MasterWeightCheck.cpp - Module weights against their masters -------===//
//
// The module weights of the model states are checked against what the
// other records of the checkpoint say of them: their shapes against
// `param_shapes` of the same file (so that an edited shape is blamed on the
// file that holds it, not on the optimizer files whose fragments then no
// longer fit), and their values against the fp32 masters.
//
// A ZeRO-1/2 checkpoint holds every trainable parameter twice: the module
// weight in each model-parallel rank's model states, and the fp32 master
// in that rank's optimizer files, cut into fragments over the DP ranks.
// After each step DeepSpeed copies the masters into the weights, rounding
// to the weights' type (round to nearest even), so the two agree element
// for element at save time. The files record no TP rank, so that
// redundancy is what catches an optimizer file of one TP rank copied over
// another's (same run, same shapes): its masters no longer round to the
// weights beside them. The check reads the weights and the masters, which
// every job reads anyway.
//
// The weights of AutoEP's routed experts are in the per-expert files (one
// per expert, its tensors keyed `<name>.<expert>`), and are checked the
// same way against the EP rank's masters; a pipeline run's are in its
// layer files, each checked against the masters of every stage holding
// the parameter (a tied weight against each stage's copy). ZeRO-3 keeps no weights in the
// model states (empty placeholders): nothing to compare there.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "JobReads.h"
#include "ucp/Checkpoint/MasterRounding.h"
#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Formats/Torch/PickleCursor.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/Crc32.h"
#include "ucp/Support/MappedFileReader.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <cstring>

using namespace ucp;
using llvm::Error;

namespace {

std::string formatValue(double value) {
  // Enough digits to tell two floats apart.
  return llvm::formatv("{0}", llvm::format("%.9g", value)).str();
}

/// The first mismatch of one parameter on one model-parallel rank.
struct Mismatch {
  int64_t count = 0;
  int64_t firstElement = -1;
  int64_t gridRank = 0;
  std::string file;
  float master = 0;
  double weight = 0;
};

/// Where a run of a model-parallel rank's shard (flat, row-major) is held
/// as a weight: `count` elements from `first`, the tensor `data` of `file`.
struct WeightBlock {
  std::string file;
  /// The expert file holding it, kept open while it is compared.
  std::shared_ptr<TorchFile> owner;
  /// The file holding it, whose pages are released once compared.
  const TorchFile *holder = nullptr;
  TensorData data;
  int64_t first = 0, count = 0;
  bool rowMajor = true;
};

/// Reads the weight element of `block` at flat shard element `element`.
const char *getWeightElement(const WeightBlock &block, int64_t element,
                             llvm::ArrayRef<int64_t> shape) {
  int64_t offset = element - block.first;
  if (!block.rowMajor) {
    Extents index = unravelIndex(offset, shape);
    offset = 0;
    for (size_t k = 0; k < index.size(); ++k)
      offset += index[k] * block.data.strides[k];
  }
  return block.data.data + offset * getElementSize(block.data.dtype);
}

/// The weight tensor `name` of `file`'s pickle under `module` (or at its
/// root, for an expert file), if it is a floating-point tensor of `shape`.
std::optional<TensorData> findWeight(const TorchFile &file,
                                     llvm::StringRef name,
                                     llvm::ArrayRef<int64_t> shape,
                                     bool inModule) {
  PickleCursor root(file.getDocument());
  std::optional<PickleCursor> holder =
      inModule ? root.find("module") : std::optional<PickleCursor>(root);
  std::optional<PickleCursor> value =
      holder ? holder->find(name) : std::nullopt;
  if (!value)
    return std::nullopt;
  llvm::Expected<PickleRef> ref = value->getTensor();
  if (!ref) {
    llvm::consumeError(ref.takeError());
    return std::nullopt;
  }
  TensorData data = file.getTensor(*ref);
  if (llvm::ArrayRef<int64_t>(data.shape) != shape ||
      !isFloatingPoint(data.dtype))
    return std::nullopt;
  return data;
}

} // namespace

/// A weight copy of a model-parallel rank's shard: its blocks, in order.
using WeightCopy = std::vector<WeightBlock>;

/// The weights of `param` on model-parallel rank `rank`: none when the
/// checkpoint holds none to compare, one copy in the model states or the
/// expert files, or each layer file's copy of a pipeline run. An expert
/// file that lacks its expert's tensor is an error.
static llvm::Expected<std::vector<WeightCopy>>
getWeightCopies(const DeepSpeedCheckpoint &checkpoint,
                const DeepSpeedParam &param, int64_t rank) {
  const Extents &shape = param.tpShapes[rank];
  std::vector<WeightCopy> copies;
  if (checkpoint.isPipeline()) {
    for (const auto &weight : checkpoint.getLayerWeights(param)) {
      if (weight.rank != rank)
        continue;
      const TorchFile &file = *checkpoint.getLayerFiles()[weight.file];
      TensorData data = file.getTensor(weight.tensor);
      copies.push_back({{file.getPath().str(), nullptr, &file, data, 0,
                         *getNumElements(shape),
                         data.strides == getRowMajorStrides(shape)}});
    }
    return copies;
  }
  if (!param.expertLayer) {
    if (rank >= int64_t(checkpoint.getModelFiles().size()))
      return copies;
    const TorchFile &model = *checkpoint.getModelFiles()[rank];
    if (std::optional<TensorData> weight =
            findWeight(model, param.name, shape, /*inModule=*/true))
      copies.push_back({{model.getPath().str(), nullptr, &model, *weight, 0,
                         *getNumElements(shape),
                         weight->strides == getRowMajorStrides(shape)}});
    return copies;
  }
  WeightCopy &blocks = copies.emplace_back();
  const AutoEpLayer &layer = checkpoint.getAutoEpLayers()[*param.expertLayer];
  llvm::ArrayRef<int64_t> expertShape = llvm::ArrayRef(shape).drop_front();
  int64_t perExpert = *getNumElements(expertShape);
  for (int64_t j = 0; j < layer.localExperts; ++j) {
    int64_t expert = rank * layer.localExperts + j;
    const std::string &path =
        checkpoint.getExpertFiles()[*param.expertLayer][expert];
    llvm::Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(path);
    if (!file)
      return file.takeError();
    std::string key = param.name + "." + std::to_string(expert);
    std::optional<TensorData> weight =
        findWeight(**file, key, expertShape, /*inModule=*/false);
    if (!weight)
      return makeError(path, "holds no " + formatList(expertShape) +
                                 " weight '" + key + "' of expert " +
                                 std::to_string(expert) +
                                 ": the file is not that expert's (a file "
                                 "of another expert or run?)");
    std::shared_ptr<TorchFile> owner(std::move(*file));
    blocks.push_back({path, owner, owner.get(), *weight, j * perExpert,
                      perExpert,
                      weight->strides == getRowMajorStrides(expertShape)});
  }
  return copies;
}

/// A run of row-major weights and their masters, each side in a file.
struct FileRun {
  /// Null where that side's bytes are in memory.
  const llvm::MemoryBuffer *weightFile, *masterFile;
  DType type;
  const char *weights, *masters;
  int64_t count;
};

/// Whether the run's weights match their masters (allMatchMasters), both
/// read from their files a chunk at a time, each chunk compared while it
/// is in the cache. With `kept`, what a `check` that follows would read
/// them for is kept as well: the masters' values scanned into `masterScan`
/// and both sides' CRC-32s recorded.
static llvm::Expected<bool> compareRunInFiles(const FileRun &run,
                                              OpenReads *kept,
                                              ValueScan &masterScan) {
  if (!run.weightFile || !run.masterFile)
    kept = nullptr; // Bytes in no file have no CRC to keep.
  llvm::Expected<MappedFileReader> weightFile =
      MappedFileReader::open(run.weightFile);
  if (!weightFile)
    return weightFile.takeError();
  llvm::Expected<MappedFileReader> masterFile =
      MappedFileReader::open(run.masterFile);
  if (!masterFile)
    return masterFile.takeError();
  constexpr int64_t kChunkElements = int64_t(1) << 15; // 128 KiB of masters.
  int64_t size = getElementSize(run.type);
  int64_t chunk = std::min(kChunkElements, run.count);
  std::vector<char> weightBytes(chunk * size), masterBytes(chunk * 4);
  uint32_t weightCrc = 0, masterCrc = 0;
  for (int64_t at = 0; at < run.count; at += chunk) {
    int64_t n = std::min(chunk, run.count - at);
    llvm::Expected<llvm::StringRef> weight = weightFile->read(
        run.weights + at * size, n * size, weightBytes.data());
    if (!weight)
      return weight.takeError();
    llvm::Expected<llvm::StringRef> master =
        masterFile->read(run.masters + at * 4, n * 4, masterBytes.data());
    if (!master)
      return master.takeError();
    if (!allMatchMasters(run.type, weight->data(), master->data(), n))
      return false;
    if (!kept)
      continue;
    masterScan.add(master->data(), n);
    weightCrc = combineCrc32(weightCrc, computeCrc32(*weight), weight->size());
    masterCrc = combineCrc32(masterCrc, computeCrc32(*master), master->size());
  }
  if (kept) {
    auto record = [&](const llvm::MemoryBuffer *file, const char *bytes,
                      int64_t length, uint32_t crc) {
      kept->crcs.add(file->getBufferIdentifier(),
                     bytes - file->getBufferStart(), length, crc);
    };
    record(run.weightFile, run.weights, run.count * size, weightCrc);
    record(run.masterFile, run.masters, run.count * 4, masterCrc);
  }
  return true;
}

/// Compares `param`'s weights on model-parallel rank `rank` with the fp32
/// masters of that rank's fragments; returns what differs, or "".
/// With `kept`, keeps what it read for a `check` that follows (OpenReads):
/// the CRC-32s, and the value scan of each master fragment it read whole
/// from its file, under tensor `index`.
static std::string compareWithMasters(const DeepSpeedCheckpoint &checkpoint,
                                      const DeepSpeedParam &param,
                                      size_t index, int64_t rank,
                                      llvm::ArrayRef<WeightBlock> blocks,
                                      OpenReads *keep) {
  if (blocks.empty())
    return "";
  int64_t outer = param.tpShapes.size();
  const Extents &shape = param.tpShapes[rank];
  Mismatch mismatch;
  int64_t start = 0;
  size_t b = 0;
  for (int64_t d = 0; d < int64_t(param.slices.size()) / outer; ++d) {
    int64_t gridRank = d * outer + rank;
    TensorData master =
        checkpoint.getFragment(param, gridRank, TensorState::Master);
    const llvm::MemoryBuffer *masterFile =
        checkpoint.getFragmentBuffer(param, gridRank, TensorState::Master);
    // The scan is kept only where every run of the fragment was read from
    // the files.
    OpenReads *kept = masterFile ? keep : nullptr;
    ValueScan masterScan(TensorState::Master, DType::F32, gridRank);
    for (int64_t i = 0; i < master.shape[0];) {
      int64_t element = start + i;
      while (element >= blocks[b].first + blocks[b].count)
        ++b;
      const WeightBlock &block = blocks[b];
      llvm::ArrayRef<int64_t> blockShape = block.data.shape;
      // The run of the fragment in this block: compared at once where the
      // block is row-major, element by element where it differs (to find
      // the first and count) or is strided.
      int64_t end = std::min<int64_t>(master.shape[0],
                                      block.first + block.count - start);
      if (block.rowMajor) {
        llvm::Expected<bool> match = compareRunInFiles(
            {&block.holder->getBuffer(), masterFile, block.data.dtype,
             getWeightElement(block, element, blockShape),
             master.data + 4 * i, end - i},
            kept, masterScan);
        if (!match)
          return llvm::toString(match.takeError());
        if (*match) {
          i = end;
          continue;
        }
      }
      kept = nullptr;
      for (; i < end; ++i) {
        const char *weight = getWeightElement(block, start + i, blockShape);
        float value;
        std::memcpy(&value, master.data + 4 * i, 4);
        if (matchesMaster(block.data.dtype, weight, value) ||
            mismatch.count++ != 0)
          continue;
        mismatch.firstElement = start + i;
        mismatch.gridRank = gridRank;
        mismatch.file = block.file;
        mismatch.master = value;
        mismatch.weight = readElement(block.data.dtype, weight);
      }
    }
    start += master.shape[0];
    if (kept)
      kept->addScan(index, TensorState::Master, gridRank, masterScan);
    // Pages the element-by-element comparison mapped in, read once.
    checkpoint.releaseFragmentPages(param, gridRank, TensorState::Master,
                                    master.data, master.shape[0] * 4);
  }
  if (mismatch.count == 0)
    return "";
  return "parameter '" + param.name + "': its weight in " + mismatch.file +
         " is not its fp32 master from " +
         checkpoint.getOptimizerFile(mismatch.gridRank).getPath().str() +
         " written as " + getSafetensorsName(blocks[0].data.dtype).str() +
         ": element " + formatList(unravelIndex(mismatch.firstElement, shape)) +
         " of model-parallel rank " + std::to_string(rank) + "'s shard " +
         formatList(shape) + " is " + formatValue(mismatch.weight) +
         ", its master " + formatValue(mismatch.master) + " (" +
         std::to_string(mismatch.count) + " of " +
         std::to_string(*getNumElements(shape)) +
         " elements differ); the files are not of one rank of one run (a "
         "file of another rank or run?)";
}

Error DeepSpeedReader::checkParamShapes() const {
  if (files.zero3)
    return Error::success();
  for (size_t o = 0; o < models.size() && o < checkpoint.modelFiles.size();
       ++o) {
    const TorchFile &model = *checkpoint.modelFiles[o];
    PickleCursor root(model.getDocument());
    std::optional<PickleCursor> module = root.find("module");
    for (const std::vector<GroupParam> &group : models[o].groups)
      for (const GroupParam &param : group) {
        std::optional<PickleCursor> value =
            module ? module->find(param.name) : std::nullopt;
        if (!value)
          continue; // An expert, kept in its own files.
        llvm::Expected<PickleRef> ref = value->getTensor();
        if (!ref) {
          llvm::consumeError(ref.takeError());
          continue;
        }
        TensorData weight = model.getTensor(*ref);
        if (weight.shape != param.shape)
          return makeError(model.getPath(),
                           "param_shapes gives '" + param.name + "' " +
                               formatList(param.shape) +
                               ", but its module weight in the same file is " +
                               formatList(weight.shape));
      }
  }
  return Error::success();
}

std::vector<int> ucp::getCheckOwners(llvm::ArrayRef<DeepSpeedParam> params,
                                     int processes) {
  std::vector<int64_t> bytes;
  for (const DeepSpeedParam &param : params)
    bytes.push_back(getNumElements(param.tpMap.logicalShape).value_or(0));
  return divideByBytes(bytes, processes);
}

llvm::Expected<std::vector<FileBytes>>
DeepSpeedCheckpoint::getWeightCheckReads(CheckShare share) const {
  // What every process's open copied into memory, then its share of the
  // comparisons (a Universal folder has no copies to compare).
  std::vector<FileBytes> reads = readIntoMemory;
  if (stage == 3 || isUniversal())
    return reads;
  std::vector<int> owners = getCheckOwners(params, share.processes);
  for (size_t p = 0; p < params.size(); ++p) {
    if (owners[p] != share.process)
      continue;
    for (int64_t rank = 0; rank < int64_t(params[p].tpShapes.size()); ++rank) {
      if (!params[p].holdsShard(rank))
        continue;
      llvm::Expected<std::vector<WeightCopy>> copies =
          getWeightCopies(*this, params[p], rank);
      if (!copies)
        return copies.takeError();
      for (const WeightCopy &copy : *copies)
        for (const WeightBlock &block : copy) {
          // The span of the block's tensor in its file.
          int64_t last = 0;
          for (auto [size, stride] :
               llvm::zip(block.data.shape, block.data.strides))
            last += (size - 1) * stride;
          const llvm::MemoryBuffer &file = block.holder->getBuffer();
          reads.push_back({file.getBufferIdentifier().str(),
                           block.data.data - file.getBufferStart(),
                           (last + 1) * getElementSize(block.data.dtype)});
        }
    }
    addStateBytes(p, TensorState::Master, reads);
  }
  // ZeRO stage 0's optimizer records in the model states and in the
  // optimizer files, both read whole (checkOptimizerCopies).
  for (size_t m = 0; m < modelFiles.size() && m < ranks.size(); ++m) {
    std::optional<PickleCursor> copy =
        PickleCursor(modelFiles[m]->getDocument()).find("optimizer");
    if (comparesOptimizerCopy(share, m) && copy &&
        !copy->is(PickleValue::None)) {
      addFileRead(modelFiles[m]->getBuffer(), reads);
      addFileRead(ranks[m].file->getBuffer(), reads);
    }
  }
  // The tied parameters' copies, compared on every stage whatever the
  // stage (checkTiedCopies).
  for (size_t p = 0; p < params.size(); ++p)
    if (owners[p] == share.process && isTiedAcrossStages(params[p], tp))
      for (TensorState state : kOptimizerStates)
        if (hasState(params[p].group, state))
          addStateBytes(p, state, reads);
  return reads;
}

Error DeepSpeedReader::checkWeightsAgainstMasters() const {
  if (files.zero3 || !share.compareWeights)
    return Error::success();
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.params;
  // This process's share of the parameters, by the bytes the check reads.
  std::vector<int> owners = getCheckOwners(params, share.processes);
  std::vector<std::string> failures(params.size());
  llvm::parallelFor(0, params.size(), [&](size_t p) {
    if (owners[p] != share.process)
      return;
    for (int64_t rank = 0; rank < int64_t(params[p].tpShapes.size()); ++rank) {
      if (!params[p].holdsShard(rank))
        continue; // A stage without it.
      llvm::Expected<std::vector<WeightCopy>> copies =
          getWeightCopies(checkpoint, params[p], rank);
      if (!copies) {
        failures[p] = llvm::toString(copies.takeError());
        return;
      }
      for (const WeightCopy &copy : *copies) {
        failures[p] = compareWithMasters(checkpoint, params[p], p, rank, copy,
                                         checkpoint.openReads.get());
        if (!failures[p].empty())
          return;
        for (const WeightBlock &block : copy)
          if (block.rowMajor)
            block.holder->releasePages(
                block.data.data,
                block.count * getElementSize(block.data.dtype));
      }
    }
  });
  for (std::string &failure : failures)
    if (!failure.empty())
      return makeError(failure);
  return Error::success();
}

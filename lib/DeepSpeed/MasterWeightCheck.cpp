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
#include "ucp/Element/FloatBits.h"
#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Formats/Torch/PickleCursor.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <cstring>

using namespace ucp;
using llvm::Error;

namespace {

/// Whether the weight element `weight` (of `type`) is the fp32 `master`
/// written to that type as DeepSpeed writes it.
bool matchesMaster(DType type, const char *weight, float master) {
  uint32_t bits = ucpFloatToBits(master);
  bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  switch (type) {
  case DType::F32: {
    uint32_t stored;
    std::memcpy(&stored, weight, sizeof(stored));
    return stored == bits || (nan && (stored & 0x7fffffffu) > 0x7f800000u);
  }
  case DType::BF16: {
    uint16_t stored;
    std::memcpy(&stored, weight, sizeof(stored));
    return stored == ucpFloatToBfloat(master) ||
           (nan && (stored & 0x7fffu) > 0x7f80u);
  }
  case DType::F16: {
    uint16_t stored;
    std::memcpy(&stored, weight, sizeof(stored));
    return stored == ucpFloatToHalf(master) ||
           (nan && (stored & 0x7fffu) > 0x7c00u);
  }
  default:
    return true; // Not a type masters are written to.
  }
}

/// Whether all `count` row-major weights of `type` at `weights` are their
/// fp32 masters at `masters` written to that type (matchesMaster). The
/// common types are compared without branches, so that the compiler
/// vectorizes the loop: this runs over every trainable weight on open.
bool allMatchMasters(DType type, const char *weights, const char *masters,
                     int64_t count) {
  int64_t differ = 0;
  auto masterBits = [&](int64_t i) {
    uint32_t bits;
    std::memcpy(&bits, masters + 4 * i, 4);
    return bits;
  };
  switch (type) {
  case DType::BF16:
    for (int64_t i = 0; i < count; ++i) {
      uint16_t stored;
      std::memcpy(&stored, weights + 2 * i, 2);
      uint32_t bits = masterBits(i);
      unsigned nan = (bits & 0x7fffffffu) > 0x7f800000u;
      // ucpFloatToBfloat's rounding of a non-NaN, written inline so that
      // the loop has no branch.
      uint16_t rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
      unsigned storedNan = (stored & 0x7fffu) > 0x7f80u;
      // A NaN master matches any NaN weight; others, the rounded bits.
      differ += (nan & (storedNan ^ 1u)) | ((nan ^ 1u) & (stored != rounded));
    }
    return differ == 0;
  case DType::F32:
    for (int64_t i = 0; i < count; ++i) {
      uint32_t stored;
      std::memcpy(&stored, weights + 4 * i, 4);
      uint32_t bits = masterBits(i);
      unsigned nan = (bits & 0x7fffffffu) > 0x7f800000u;
      unsigned storedNan = (stored & 0x7fffffffu) > 0x7f800000u;
      differ += (nan & (storedNan ^ 1u)) | ((nan ^ 1u) & (stored != bits));
    }
    return differ == 0;
  default:
    for (int64_t i = 0; i < count; ++i) {
      float master;
      std::memcpy(&master, masters + 4 * i, 4);
      if (!matchesMaster(type, weights + i * getElementSize(type), master))
        return false;
    }
    return true;
  }
}

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

/// Compares `param`'s weights on model-parallel rank `rank` with the fp32
/// masters of that rank's fragments; returns what differs, or "".
static std::string compareWithMasters(const DeepSpeedCheckpoint &checkpoint,
                                      const DeepSpeedParam &param,
                                      int64_t rank,
                                      llvm::ArrayRef<WeightBlock> blocks) {
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
      if (block.rowMajor &&
          allMatchMasters(block.data.dtype,
                          getWeightElement(block, element, blockShape),
                          master.data + 4 * i, end - i)) {
        i = end;
        continue;
      }
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
    // Read once here; the job reads them again from the page cache.
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

Error DeepSpeedReader::checkWeightsAgainstMasters() const {
  if (files.zero3)
    return Error::success();
  llvm::ArrayRef<DeepSpeedParam> params = checkpoint.params;
  // This process's share of the parameters, by the bytes the check reads.
  std::vector<int64_t> bytes;
  for (const DeepSpeedParam &param : params)
    bytes.push_back(getNumElements(param.tpMap.logicalShape).value_or(0));
  std::vector<int> owners = divideByBytes(bytes, share.processes);
  std::vector<std::string> failures(params.size());
  llvm::parallelFor(0, params.size(), [&](size_t p) {
    if (owners[p] != share.process)
      return;
    for (int64_t rank = 0; rank < int64_t(params[p].tpShapes.size());
         ++rank) {
      if (!params[p].holdsShard(rank))
        continue; // A stage without it.
      llvm::Expected<std::vector<WeightCopy>> copies =
          getWeightCopies(checkpoint, params[p], rank);
      if (!copies) {
        failures[p] = llvm::toString(copies.takeError());
        return;
      }
      for (const WeightCopy &copy : *copies) {
        failures[p] = compareWithMasters(checkpoint, params[p], rank, copy);
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

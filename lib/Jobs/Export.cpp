//===- Export.cpp - A checkpoint's model weights as safetensors -----------===//
//
// Three steps. Collect: the module buffers and frozen parameters the model
// states hold whole, then every trainable parameter, planned from its map
// into the full tensor (the fp32 master gathered from every rank's
// fragments; TP, EP and ZeRO alike), tied names last. Lay out: the tensors
// in that order, cut into files of at most the shard size. Write: each
// file's header, then each tensor made and written at its offset, the
// files in a temporary folder renamed into place once all are written.
//
//===----------------------------------------------------------------------===//

#include "ucp/Jobs/Export.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Element/FloatBits.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/ProgramDriver.h"
#include "ucp/Formats/Torch/PickleCursor.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/Planner.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/OutputFile.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cstring>
#include <set>

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace path = llvm::sys::path;

namespace {

/// One tensor of the export.
struct ExportTensor {
  std::string name;
  DType dtype = DType::F32;
  Extents shape;
  int64_t bytes = 0;
  /// A trainable parameter, made from its fp32 master...
  const DeepSpeedParam *param = nullptr;
  /// ...or a tensor the model states hold whole.
  TensorData saved;
  /// Where it goes: its file and its offset in the file's data.
  size_t file = 0;
  int64_t offset = 0;
};

/// One output file.
struct ExportFile {
  std::string name;
  std::vector<size_t> tensors;
  int64_t bytes = 0;
};

class Exporter {
public:
  Exporter(const DeepSpeedCheckpoint &checkpoint, const ExportOptions &options)
      : checkpoint(checkpoint), options(options) {}
  Error collect();
  Error plan();
  void layOut();
  Error write(llvm::StringRef folder);
  const std::vector<ExportTensor> &getTensors() const { return tensors; }
  size_t getFileCount() const { return files.size(); }
  int64_t getBytes() const { return total; }

private:
  Error addSaved(llvm::StringRef name, const PickleCursor &tensor,
                 std::optional<Extents> shape);
  Error collectSaved();
  Error addTiedNames(const PickleCursor &root);
  Error writeFile(const ExportFile &file, llvm::StringRef folder);
  Error writeParam(const ExportTensor &tensor, OutputFile &out,
                   int64_t dataStart);
  void reportProgress(bool force);

  const DeepSpeedCheckpoint &checkpoint;
  const ExportOptions &options;
  std::vector<ExportTensor> tensors;
  std::vector<ExportFile> files;
  TransferPrograms programs;
  int64_t total = 0, written = 0;
  size_t done = 0;
  std::chrono::steady_clock::time_point lastProgress;
  /// Reused from tensor to tensor: memory holds about the largest one.
  std::vector<float> master;
  std::vector<char> narrowed;
};

} // namespace

/// The dtype `type` is exported as: floating point in the chosen dtype.
static DType getExportType(DType type, DType chosen) {
  return isFloatingPoint(type) ? chosen : type;
}

Error Exporter::addSaved(llvm::StringRef name, const PickleCursor &value,
                         std::optional<Extents> shape) {
  const TorchFile &model = *checkpoint.getModelFiles().front();
  Expected<PickleRef> ref = value.getTensor();
  if (!ref)
    return makeError(model.getPath() + ": " + llvm::toString(ref.takeError()));
  ExportTensor tensor;
  tensor.name = name.str();
  tensor.saved = model.getTensor(*ref);
  tensor.shape = shape.value_or(tensor.saved.shape);
  if (getNumElements(tensor.shape) != getNumElements(tensor.saved.shape))
    return makeError(model.getPath() + ": '" + name + "' holds " +
                     formatList(tensor.saved.shape) + ", not its shape " +
                     formatList(tensor.shape));
  tensor.dtype = getExportType(tensor.saved.dtype, options.dtype);
  tensors.push_back(std::move(tensor));
  return Error::success();
}

Error Exporter::collectSaved() {
  const TorchFile &model = *checkpoint.getModelFiles().front();
  PickleCursor root(model.getDocument());
  auto inModel = [&](Error error) {
    return makeError(model.getPath() + ": " + llvm::toString(std::move(error)));
  };
  Expected<PickleCursor> module = root.at("module");
  if (!module)
    return inModel(module.takeError());
  // Module buffers (TP rank 0's, as zero_to_fp32 takes rank 0's).
  if (std::optional<PickleCursor> names = root.find("buffer_names")) {
    Expected<std::vector<PickleCursor>> items = names->getItems();
    if (!items)
      return inModel(items.takeError());
    for (const PickleCursor &item : *items) {
      Expected<std::string> name = item.getString();
      Expected<PickleCursor> value =
          name ? module->at(*name) : Expected<PickleCursor>(name.takeError());
      if (!value)
        return inModel(value.takeError());
      if (Error error = addSaved(*name, *value, std::nullopt))
        return error;
    }
  }
  // Frozen parameters: whole in ZeRO-1/2 files without TP.
  std::optional<PickleCursor> frozen = root.find("frozen_param_shapes");
  if (frozen && frozen->is(PickleValue::Dict) && !frozen->get().items.empty()) {
    if (checkpoint.getZeroStage() == 3 || checkpoint.getTpDegree() > 1)
      return makeError(model.getPath() +
                       ": frozen parameters of a ZeRO-3 or tensor-parallel "
                       "checkpoint, which are not exported yet");
    Expected<std::vector<std::pair<std::string, PickleCursor>>> shapes =
        frozen->getStringItems();
    Expected<PickleCursor> fragments = root.at("frozen_param_fragments");
    if (!shapes || !fragments)
      return inModel(
          llvm::joinErrors(shapes.takeError(), fragments.takeError()));
    for (const auto &[name, shape] : *shapes) {
      Expected<Extents> extents = shape.getInts();
      Expected<PickleCursor> value = fragments->at(name);
      if (!extents || !value)
        return inModel(
            llvm::joinErrors(extents.takeError(), value.takeError()));
      if (Error error = addSaved(name, *value, *extents))
        return error;
    }
  }
  return Error::success();
}

Error Exporter::addTiedNames(const PickleCursor &root) {
  // shared_params: a tied name -> the parameter it is; written once more
  // under that name (safetensors holds no aliases).
  std::optional<PickleCursor> shared = root.find("shared_params");
  if (!shared || !shared->is(PickleValue::Dict))
    return Error::success();
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      shared->getStringItems();
  if (!items)
    return items.takeError();
  for (const auto &[alias, target] : *items) {
    Expected<std::string> name = target.getString();
    if (!name)
      return name.takeError();
    auto found = llvm::find_if(
        tensors, [&](const ExportTensor &t) { return t.name == *name; });
    if (found == tensors.end())
      return shared->fail("ties '" + alias + "' to '" + *name +
                          "', which the checkpoint does not hold");
    ExportTensor copy = *found;
    copy.name = alias;
    tensors.push_back(std::move(copy));
  }
  return Error::success();
}

Error Exporter::collect() {
  if (Error error = collectSaved())
    return error;
  for (const DeepSpeedParam &param : checkpoint.getParams()) {
    ExportTensor tensor;
    tensor.name = param.name;
    tensor.param = &param;
    tensor.shape = getFullTensorMap(param.map).logicalShape;
    tensor.dtype = options.dtype;
    tensors.push_back(std::move(tensor));
  }
  const TorchFile &model = *checkpoint.getModelFiles().front();
  if (Error error = addTiedNames(PickleCursor(model.getDocument())))
    return makeError(model.getPath() + ": " + llvm::toString(std::move(error)));
  std::set<std::string> names;
  for (ExportTensor &tensor : tensors) {
    if (!names.insert(tensor.name).second)
      return makeError("'" + tensor.name +
                       "' is both a trainable parameter and a buffer or frozen "
                       "parameter of the model states");
    std::optional<int64_t> bytes = getNumBytes(tensor.shape, tensor.dtype);
    if (!bytes)
      return makeError("'" + tensor.name + "': " + formatList(tensor.shape) +
                       " holds more bytes than int64 counts");
    tensor.bytes = *bytes;
  }
  return Error::success();
}

Error Exporter::plan() {
  std::vector<ParamMap> sources, targets;
  for (const DeepSpeedParam &param : checkpoint.getParams()) {
    sources.push_back(param.map);
    targets.push_back(getFullTensorMap(param.map));
  }
  ReplicaPolicy policy;
  policy.kind = ReplicaPolicy::Lowest;
  Expected<TransferPrograms> planned = planTransfers(sources, targets, policy);
  if (!planned)
    return planned.takeError();
  programs = std::move(*planned);
  return Error::success();
}

void Exporter::layOut() {
  for (auto [index, tensor] : llvm::enumerate(tensors)) {
    if (files.empty() ||
        (!files.back().tensors.empty() &&
         files.back().bytes + tensor.bytes > options.maxShardBytes))
      files.emplace_back();
    ExportFile &file = files.back();
    tensor.file = files.size() - 1;
    tensor.offset = file.bytes;
    file.bytes += tensor.bytes;
    file.tensors.push_back(index);
    total += tensor.bytes;
  }
  for (auto [index, file] : llvm::enumerate(files))
    file.name = files.size() == 1
                    ? std::string("model.safetensors")
                    : llvm::formatv("model-{0:d5}-of-{1:d5}.safetensors",
                                    index + 1, files.size())
                          .str();
}

/// Writes the elements of `saved` (any strides) to `out` as `type`.
static void convertSaved(const TensorData &saved, DType type, char *out) {
  int64_t elements = *getNumElements(saved.shape);
  int64_t from = getElementSize(saved.dtype), to = getElementSize(type);
  Extents index(saved.shape.size(), 0);
  for (int64_t e = 0; e < elements; ++e) {
    int64_t at = 0;
    for (size_t d = 0; d < index.size(); ++d)
      at += index[d] * saved.strides[d];
    const char *element = saved.data + at * from;
    if (type == saved.dtype) {
      std::memcpy(out + e * to, element, to);
    } else {
      float value = static_cast<float>(readElement(saved.dtype, element));
      narrowFloat32(&value, 1, type, out + e * to);
    }
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < saved.shape[d])
        break;
      index[d] = 0;
    }
  }
}

Error Exporter::writeParam(const ExportTensor &tensor, OutputFile &out,
                           int64_t dataStart) {
  const DeepSpeedParam &param = *tensor.param;
  ProgramRun run = checkpoint.getFragmentRun(param, OptimizerState::Fp32,
                                             programs.at(param.name));
  std::map<int64_t, const char *> shards;
  for (const auto &[rank, data] : run.buffers.sources)
    shards[rank] = static_cast<const char *>(data);
  // Replicated blocks (TP) must agree before one copy is kept.
  if (Error error = checkReplicas(param.map, shards, 4))
    return makeError("parameter '" + param.name +
                     "': " + llvm::toString(std::move(error)));
  int64_t elements = *getNumElements(tensor.shape);
  int64_t at = dataStart + tensor.offset;
  auto release = [&](int64_t rank, const char *data, size_t bytes) {
    checkpoint.releaseFragmentPages(param, rank, OptimizerState::Fp32, data,
                                    bytes);
  };
  // fp32 runs of the fragments go out as they lie.
  if (tensor.dtype == DType::F32)
    if (std::optional<std::vector<SourcePiece>> pieces =
            getSourcePieces(run, 0)) {
      for (const SourcePiece &piece : *pieces) {
        if (Error error = out.writeAt(at, piece.bytes))
          return error;
        release(piece.rank, piece.bytes.data(), piece.bytes.size());
        at += piece.bytes.size();
      }
      return Error::success();
    }
  master.resize(elements);
  run.buffers.targets[0] = master.data();
  CpuExecutor cpu(/*threads=*/1);
  if (Error error = runIntoTarget(run, 0, elements, cpu, release))
    return error;
  narrowed.resize(tensor.bytes);
  narrowFloat32(master.data(), elements, tensor.dtype, narrowed.data());
  return out.writeAt(at, {narrowed.data(), narrowed.size()});
}

void Exporter::reportProgress(bool force) {
  if (!options.progress)
    return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - lastProgress < std::chrono::seconds(1))
    return;
  lastProgress = now;
  options.progress(done, tensors.size(), written);
}

/// The safetensors header of `file`, padded with spaces to 8 bytes.
static std::string buildHeader(const ExportFile &file,
                               llvm::ArrayRef<ExportTensor> tensors) {
  llvm::json::Object header;
  header["__metadata__"] = llvm::json::Object{{"format", "pt"}};
  for (size_t index : file.tensors) {
    const ExportTensor &tensor = tensors[index];
    llvm::json::Array shape;
    for (int64_t extent : tensor.shape)
      shape.push_back(extent);
    header[tensor.name] = llvm::json::Object{
        {"dtype", getSafetensorsName(tensor.dtype)},
        {"shape", std::move(shape)},
        {"data_offsets",
         llvm::json::Array{tensor.offset, tensor.offset + tensor.bytes}}};
  }
  std::string text = llvm::formatv("{0}", llvm::json::Value(std::move(header)));
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

Error Exporter::writeFile(const ExportFile &file, llvm::StringRef folder) {
  llvm::SmallString<256> where(folder);
  path::append(where, file.name);
  Expected<std::unique_ptr<OutputFile>> out = OutputFile::create(where);
  if (!out)
    return out.takeError();
  std::string header = buildHeader(file, tensors);
  int64_t dataStart = 8 + header.size();
  if (Error error = (*out)->reserve(dataStart + file.bytes))
    return error;
  std::string prefix(8, '\0');
  llvm::support::endian::write64le(prefix.data(), header.size());
  if (Error error = (*out)->writeAt(0, prefix + header))
    return error;
  for (size_t index : file.tensors) {
    const ExportTensor &tensor = tensors[index];
    if (tensor.param) {
      if (Error error = writeParam(tensor, **out, dataStart))
        return error;
    } else {
      narrowed.resize(tensor.bytes);
      convertSaved(tensor.saved, tensor.dtype, narrowed.data());
      if (Error error = (*out)->writeAt(dataStart + tensor.offset,
                                        {narrowed.data(), narrowed.size()}))
        return error;
    }
    written += tensor.bytes;
    ++done;
    reportProgress(false);
  }
  return (*out)->commit(/*durable=*/false);
}

Error Exporter::write(llvm::StringRef folder) {
  for (const ExportFile &file : files)
    if (Error error = writeFile(file, folder))
      return error;
  reportProgress(true);
  if (files.size() == 1)
    return Error::success();
  // Hugging Face's index: the total size and each tensor's file.
  llvm::json::Object map;
  for (const ExportTensor &tensor : tensors)
    map[tensor.name] = files[tensor.file].name;
  llvm::json::Value index(llvm::json::Object{
      {"metadata", llvm::json::Object{{"total_size", total}}},
      {"weight_map", std::move(map)}});
  llvm::SmallString<256> where(folder);
  path::append(where, "model.safetensors.index.json");
  return writeOutputFile(where, [&](llvm::raw_ostream &os) {
    os << llvm::formatv("{0:2}", index) << "\n";
    return Error::success();
  });
}

Expected<ExportStats> ucp::exportModel(const DeepSpeedCheckpoint &checkpoint,
                                       llvm::StringRef folder,
                                       const ExportOptions &options) {
  auto start = std::chrono::steady_clock::now();
  if (options.dtype != DType::F32 && options.dtype != DType::BF16 &&
      options.dtype != DType::F16)
    return makeError("--dtype " + getSafetensorsName(options.dtype) +
                     ": expected fp32, bf16 or fp16");
  if (options.maxShardBytes < 1)
    return makeError("--max-shard-size: expected at least one byte");
  Exporter exporter(checkpoint, options);
  if (Error error = exporter.collect())
    return std::move(error);
  if (Error error = exporter.plan())
    return std::move(error);
  exporter.layOut();
  Expected<std::unique_ptr<OutputFolder>> out = OutputFolder::create(folder);
  if (!out)
    return out.takeError();
  if (Error error = exporter.write((*out)->getTemporaryPath()))
    return std::move(error);
  if (Error error = (*out)->commit(options.syncOutputs))
    return std::move(error);
  ExportStats stats;
  stats.tensors = exporter.getTensors().size();
  stats.files = exporter.getFileCount() + (exporter.getFileCount() > 1);
  stats.bytesWritten = exporter.getBytes();
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return stats;
}

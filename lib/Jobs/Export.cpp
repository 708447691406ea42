//===- Export.cpp - A checkpoint's model weights as safetensors -----------===//
//
// Three steps. Collect: the tensors the checkpoint holds whole (module
// buffers and frozen parameters), then every trainable parameter, each
// planned from its map into the full tensor (the fp32 master gathered from
// every rank's fragments; TP, EP and ZeRO alike), aliases last. Lay out:
// the tensors in that order, cut into files of at most the shard size.
// Write: each file's header, then each tensor made and written at its
// offset, the files in a temporary folder renamed into place once all are
// written.
//
//===----------------------------------------------------------------------===//

#include "ucp/Jobs/Export.h"
#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Checkpoint/ValueCheck.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/ProgramDriver.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/Planner.h"
#include "ucp/Support/CheckpointFolder.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/OutputFile.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <set>

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace path = llvm::sys::path;

namespace {

/// One tensor of the export.
struct ExportTensor {
  std::string name;
  /// The source's tensor, and the state it is made from: the fp32 master
  /// where there is one, else the weight.
  size_t index = 0;
  TensorState state = TensorState::Master;
  DType dtype = DType::F32;
  Extents shape;
  int64_t bytes = 0;
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
  Exporter(const CheckpointSource &source, const ExportOptions &options)
      : source(source), options(options) {}
  Error collect();
  Error plan();
  void layOut();
  /// Divides the files among the processes of the options' group, and
  /// returns what they must agree on.
  GroupFingerprint divideOutputs();
  /// The bytes of the source this process's files read: every shard of
  /// the state each of their tensors is made from.
  std::vector<FileBytes> getReads() const;
  /// Writes the files this process holds into `folder`.
  Error write(llvm::StringRef folder);
  const std::vector<ExportTensor> &getTensors() const { return tensors; }
  size_t getFileCount() const { return files.size(); }
  int64_t getBytes() const { return total; }

private:
  void add(size_t index);
  Error writeFile(const ExportFile &file, llvm::StringRef folder);
  Error writeTensor(const ExportTensor &tensor, OutputFile &out,
                    int64_t dataStart);
  /// Reports progress, at most once a second unless `force`; an error
  /// when the progress function stops the export.
  Error report(bool force);

  const CheckpointSource &source;
  const ExportOptions &options;
  std::vector<ExportTensor> tensors;
  std::vector<ExportFile> files;
  TransferPrograms programs;
  int64_t total = 0, written = 0;
  size_t done = 0, mine = 0;
  /// The files, then the index, and who writes each.
  OutputShare share;
  std::chrono::steady_clock::time_point lastProgress;
  /// Reused from tensor to tensor: memory holds about the largest one.
  std::vector<char> gathered, converted;
};

} // namespace

/// The dtype `type` is exported as: floating point in the chosen dtype.
static DType getExportType(DType type, DType chosen) {
  return isFloatingPoint(type) ? chosen : type;
}

void Exporter::add(size_t index) {
  const CheckpointTensor &from = source.getTensors()[index];
  ExportTensor tensor;
  tensor.name = from.name;
  tensor.index = index;
  tensor.state = from.getType(TensorState::Master) ? TensorState::Master
                                                   : TensorState::Weight;
  tensor.dtype = getExportType(*from.getType(tensor.state), options.dtype);
  tensor.shape = getFullTensorMap(from.map).logicalShape;
  tensors.push_back(std::move(tensor));
}

Error Exporter::collect() {
  if (Error error = source.checkComplete())
    return error;
  llvm::ArrayRef<CheckpointTensor> held = source.getTensors();
  std::set<std::string> excluded;
  for (bool trainable : {false, true})
    for (size_t index = 0; index < held.size(); ++index) {
      if ((held[index].role == CheckpointTensor::Role::Trainable) != trainable)
        continue;
      if (options.excludeFrozen &&
          held[index].role == CheckpointTensor::Role::Frozen)
        excluded.insert(held[index].name);
      else
        add(index);
    }
  // An alias (a tied weight) is written once more under its name:
  // safetensors holds no aliases.
  for (const auto &[alias, name] : source.getAliases()) {
    if (excluded.count(name))
      continue;
    auto found = llvm::find_if(
        tensors, [&](const ExportTensor &t) { return t.name == name; });
    if (found == tensors.end())
      return makeError(source.getPath(), "'" + alias + "' is tied to '" + name +
                                             "', which the checkpoint "
                                             "does not hold");
    ExportTensor copy = *found;
    copy.name = alias;
    tensors.push_back(std::move(copy));
  }
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
  for (const CheckpointTensor &tensor : source.getTensors()) {
    sources.push_back(tensor.map);
    targets.push_back(getFullTensorMap(tensor.map));
  }
  // The lowest holder of a replicated block (TP rank 0), after every copy
  // has been compared with it.
  Expected<TransferPrograms> planned =
      planTransfers(sources, targets, {ReplicaPolicy::Lowest});
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

Error Exporter::writeTensor(const ExportTensor &tensor, OutputFile &out,
                            int64_t dataStart) {
  const CheckpointTensor &from = source.getTensors()[tensor.index];
  ProgramRun run =
      source.getRun(tensor.index, tensor.state, programs.at(from.name));
  // Replicated blocks (TP) must agree before one copy is kept.
  std::map<int64_t, const char *> shards;
  for (const auto &[rank, data] : run.buffers.sources)
    shards[rank] = static_cast<const char *>(data);
  if (Error error = checkReplicas(from.map, shards, getElementSize(run.type)))
    return error;
  if (options.checkValues)
    if (Error error = checkStateValues(
            from.map, tensor.state, run.type, shards, [&](int64_t rank) {
              return source.getShardFile(tensor.index, tensor.state, rank);
            }))
      return error;
  int64_t at = dataStart + tensor.offset;
  auto release = source.getReleaser(tensor.index, tensor.state);
  // Runs of the shards go out as they lie.
  if (tensor.dtype == run.type)
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
  int64_t elements = *getNumElements(tensor.shape);
  gathered.resize(elements * getElementSize(run.type));
  run.buffers.targets[0] = gathered.data();
  CpuExecutor cpu(/*threads=*/1);
  if (Error error = runIntoTarget(run, 0, elements, cpu, release))
    return error;
  converted.resize(tensor.bytes);
  convertElements(gathered.data(), run.type, converted.data(), tensor.dtype,
                  elements);
  return out.writeAt(at, {converted.data(), converted.size()});
}

Error Exporter::report(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now - lastProgress < std::chrono::seconds(1))
    return Error::success();
  lastProgress = now;
  return reportProgress(options.progress, done, mine, written);
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
    if (Error error = writeTensor(tensor, **out, dataStart))
      return error;
    written += tensor.bytes;
    ++done;
    if (Error error = report(false))
      return error;
  }
  return (*out)->commit(/*durable=*/false);
}

GroupFingerprint Exporter::divideOutputs() {
  for (const ExportFile &file : files)
    share.add(file.name, file.bytes);
  share.add("model.safetensors.index.json", 0);
  share.divide(options.group);
  for (auto [index, file] : llvm::enumerate(files))
    if (share.isMine(index))
      mine += file.tensors.size();
  GroupFingerprint plan;
  plan.addValue("the job", "export");
  addInputFiles(plan, source.getPath(), source.getFiles());
  for (const ExportTensor &tensor : tensors)
    plan.addMap("the map of '" + tensor.name + "'",
                source.getTensors()[tensor.index].map);
  share.addTo(plan);
  return plan;
}

std::vector<FileBytes> Exporter::getReads() const {
  std::vector<FileBytes> reads;
  for (auto [index, file] : llvm::enumerate(files))
    if (share.isMine(index))
      for (size_t t : file.tensors)
        source.addStateBytes(tensors[t].index, tensors[t].state, reads);
  return reads;
}

Error Exporter::write(llvm::StringRef folder) {
  for (auto [index, file] : llvm::enumerate(files)) {
    if (!share.isMine(index))
      continue;
    if (Error error = writeFile(file, folder))
      return error;
    if (options.group)
      options.group->markOutputWritten();
  }
  if (Error error = report(true))
    return error;
  if (files.size() == 1 || !share.isMine(files.size()))
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

Expected<ExportStats> ucp::exportModel(const CheckpointSource &checkpoint,
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
  // Every process plans; should one fail alone, all stop.
  Error planned = exporter.collect();
  if (!planned)
    planned = exporter.plan();
  if (options.group)
    planned = options.group->agree(std::move(planned));
  if (planned)
    return std::move(planned);
  exporter.layOut();
  GroupFingerprint plan = exporter.divideOutputs();
  if (options.supplyInput)
    if (Error error = supplyReads(options.supplyInput, options.group,
                                  exporter.getReads()))
      return std::move(error);
  if (Error error = writeFolderTogether(
          options.group, folder, plan,
          [&](llvm::function_ref<Error(llvm::StringRef)> write) -> Error {
            Expected<std::unique_ptr<OutputFolder>> out =
                OutputFolder::create(folder);
            if (!out)
              return out.takeError();
            if (Error error = write((*out)->getTemporaryPath()))
              return error;
            return (*out)->commit(options.syncOutputs);
          },
          [&](llvm::StringRef staged) { return exporter.write(staged); },
          options.syncOutputs))
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

std::optional<int64_t> ucp::parseShardSize(llvm::StringRef text) {
  static const std::pair<llvm::StringRef, int64_t> kUnits[] = {
      {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", int64_t(1) << 30},
      {"KB", 1000},     {"MB", 1000000},  {"GB", 1000000000}};
  int64_t unit = 1;
  for (auto [suffix, factor] : kUnits)
    if (text.consume_back(suffix)) {
      unit = factor;
      break;
    }
  uint64_t count = 0;
  if (text.getAsInteger(10, count) || count == 0 ||
      count > uint64_t(INT64_MAX / unit))
    return std::nullopt;
  return static_cast<int64_t>(count) * unit;
}

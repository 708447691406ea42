//===- CheckpointSummary.cpp - What a checkpoint folder holds -------------===//
//
// The checkpoint is opened by the reader of its format, which validates it
// as every job does; the summary is what the reader found. How a tensor is
// split is read from its map: the shape of the shards tells a split along
// one dimension, a copy on every rank, or pieces (a fused or interleaved
// layout).
//
//===----------------------------------------------------------------------===//

#include "ucp/Jobs/CheckpointSummary.h"
#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"
#include "ucp/Jobs/OpenCheckpoint.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace ucp;
namespace fs = llvm::sys::fs;

/// "rows", "columns" or "dimension d" of a tensor of `rank` dimensions.
static std::string nameDimension(size_t dim, size_t rank) {
  if (dim == 0 && rank <= 2)
    return "rows";
  if (dim == 1 && rank == 2)
    return "columns";
  return "dimension " + std::to_string(dim);
}

/// How `map` places its tensor on its ranks, in a few words; `ranks` names
/// them ("TP", "EP", "ranks").
static std::string describeSplit(const ParamMap &map, llvm::StringRef ranks) {
  std::string over = ranks.str() + " " + std::to_string(map.worldSize);
  if (map.worldSize == 1)
    return "whole";
  int64_t full = getNumElements(map.logicalShape).value_or(0);
  bool everyRankWhole = llvm::all_of(map.shards, [&](const Shard &shard) {
    return getNumElements(shard.shape).value_or(0) == full;
  });
  if (everyRankWhole && map.shards.size() == size_t(map.worldSize))
    return "replicated on " + over;
  // One piece per shard, narrower than F along one dimension only.
  std::optional<size_t> splitDim;
  bool oneDimension = !map.shards.empty();
  for (const Shard &shard : map.shards) {
    if (shard.pieces.size() != 1 ||
        shard.pieces[0].shape.size() != map.logicalShape.size()) {
      oneDimension = false;
      break;
    }
    for (size_t d = 0; d < map.logicalShape.size(); ++d)
      if (shard.pieces[0].shape[d] != map.logicalShape[d]) {
        oneDimension &= !splitDim || *splitDim == d;
        splitDim = d;
      }
  }
  if (oneDimension && splitDim)
    return nameDimension(*splitDim, map.logicalShape.size()) + " / " + over;
  size_t pieces = 0;
  for (const Shard &shard : map.shards)
    pieces += shard.pieces.size();
  return std::to_string(pieces) + (pieces == 1 ? " piece" : " pieces") +
         " over " + over + " (fused or interleaved)";
}

/// The role of `tensor`, in a word.
static const char *getRoleName(CheckpointTensor::Role role) {
  switch (role) {
  case CheckpointTensor::Role::Trainable:
    return "trainable";
  case CheckpointTensor::Role::Frozen:
    return "frozen";
  case CheckpointTensor::Role::Buffer:
    return "buffer";
  }
  llvm_unreachable("unknown role");
}

/// The summary's tensors, with their layouts from `checkpoint`'s maps.
static void summarizeTensors(const CheckpointSource &source,
                             const DeepSpeedCheckpoint *deepSpeed,
                             CheckpointSummary &summary) {
  for (const CheckpointTensor &tensor : source.getTensors()) {
    TensorSummary &entry = summary.tensors.emplace_back();
    entry.name = tensor.name;
    entry.shape = tensor.map.logicalShape;
    entry.role = getRoleName(tensor.role);
    for (auto [state, type] : tensor.states)
      entry.states.emplace_back(getStateName(state).str(),
                                getDTypeName(type).str());
    entry.layout = describeSplit(tensor.map, "ranks");
    // A frozen parameter: its TP split, then ZeRO-3's fragments.
    if (const ParamMap *tpMap =
            deepSpeed ? deepSpeed->getFrozenTpMap(tensor.name) : nullptr) {
      entry.layout = tpMap->worldSize > 1 ? describeSplit(*tpMap, "TP")
                                          : "whole";
      if (tensor.map.worldSize > tpMap->worldSize)
        entry.layout += ", ZeRO-3 fragments over DP " +
                        std::to_string(tensor.map.worldSize / tpMap->worldSize);
    }
  }
  if (!deepSpeed || deepSpeed->isUniversal())
    return;
  // A trainable parameter: its TP (or EP) split, then ZeRO's fragments.
  for (const DeepSpeedParam &param : deepSpeed->getParams()) {
    auto entry = llvm::find_if(summary.tensors, [&](const TensorSummary &t) {
      return t.name == param.name;
    });
    if (entry == summary.tensors.end())
      continue;
    std::string layout;
    if (deepSpeed->isPipeline()) {
      // The stages holding it (two for a tied module), then its TP split.
      std::set<int64_t> stages;
      for (const Shard &shard : param.tpMap.shards)
        stages.insert(shard.rank / deepSpeed->getTpDegree());
      layout = (stages.size() == 1 ? "stage " : "stages ") +
               llvm::join(llvm::map_range(stages,
                                          [](int64_t s) {
                                            return std::to_string(s);
                                          }),
                          ", ") +
               (stages.size() > 1 ? " (tied)" : "");
      if (deepSpeed->getTpDegree() > 1)
        layout += ", " + describeSplit(param.tpMap, "MP");
    } else if (param.expertLayer) {
      layout = "experts / EP " + std::to_string(deepSpeed->getAutoEpSize());
    } else {
      layout = param.tpMap.worldSize > 1 ? describeSplit(param.tpMap, "TP")
                                         : "whole";
    }
    // An expert's fragments are cut over its expert-data-parallel ranks.
    int64_t zeroRanks = deepSpeed->getDpDegree();
    if (param.expertLayer)
      zeroRanks /= std::max<int64_t>(deepSpeed->getAutoEpSize(), 1);
    if (zeroRanks > 1)
      layout += ", ZeRO-" + std::to_string(deepSpeed->getZeroStage()) +
                " fragments over " + (param.expertLayer ? "expert DP " : "DP ") +
                std::to_string(zeroRanks);
    entry->layout = layout;
  }
}

/// The files under `path` (itself if a file) and their bytes.
static void measureDisk(llvm::StringRef path, CheckpointSummary &summary) {
  fs::file_status status;
  if (!fs::status(path, status) && fs::is_regular_file(status)) {
    summary.files = 1;
    summary.bytesOnDisk = status.getSize();
    return;
  }
  std::error_code error;
  for (fs::recursive_directory_iterator it(path, error), end;
       it != end && !error; it.increment(error))
    if (!fs::status(it->path(), status) && fs::is_regular_file(status)) {
      ++summary.files;
      summary.bytesOnDisk += status.getSize();
    }
}

/// What a DeepSpeed checkpoint is, and what can be done with it.
static void summarizeDeepSpeed(const DeepSpeedCheckpoint &checkpoint,
                               CheckpointSummary &summary) {
  summary.deepSpeedVersion = checkpoint.getDeepSpeedVersion().str();
  summary.step = checkpoint.getGlobalSteps();
  summary.pp = checkpoint.getPipelineDegree();
  summary.tp = checkpoint.getTpDegree();
  summary.dp = checkpoint.getRecordedDpDegree();
  summary.ep = checkpoint.getAutoEpSize();
  for (const DeepSpeedParam &param : checkpoint.getParams()) {
    if (param.group >= summary.groupSizes.size())
      summary.groupSizes.resize(param.group + 1);
    ++summary.groupSizes[param.group];
  }
  bool frozen = llvm::any_of(summary.tensors, [](const TensorSummary &t) {
    return t.role == "frozen";
  });
  bool rules = checkpoint.getCategories().has_value();
  if (checkpoint.isUniversal()) {
    summary.format = "Universal";
    // DeepSpeed runs no pipeline with ZeRO-3; one with TP is not written.
    summary.applies = {checkpoint.isPipeline()
                           ? "universal-to-ds (--dp, --zero-stage 1|2, --pp; "
                             "--pp-tied for each tied module)"
                           : "universal-to-ds (--dp, --tp, --zero-stage)",
                       "export"};
    if (checkpoint.getAutoEpSize())
      summary.applies.push_back("universal-to-ds --autoep-size");
  } else {
    summary.format =
        "DeepSpeed " +
        std::string(checkpoint.isBf16Optimizer() ? "BF16_Optimizer (ZeRO-1)"
                                  : "ZeRO-" + std::to_string(
                                                  checkpoint.getZeroStage()));
    summary.applies.push_back(
        rules ? "ds-to-universal"
              : "ds-to-universal --inject_missing_state (the model states "
                "carry no universal_checkpoint_info)");
    summary.applies.push_back(checkpoint.isPipeline()
                                  ? "ds-retarget --dp, --zero-stage 1|2"
                                  : "ds-retarget --dp, --zero-stage 1|2|3");
    if (rules && !checkpoint.isPipeline())
      summary.applies.push_back(
          frozen ? "ds-retarget --tp (frozen parameters: to TP 1, to a "
                   "degree recorded, or with --target-map)"
                 : "ds-retarget --tp");
    else
      summary.refused.push_back(
          std::string("ds-retarget --tp: ") +
          (checkpoint.isPipeline()
               ? "a pipeline with tensor parallelism is not written"
               : "the model states carry no universal_checkpoint_info "
                 "(give the target's maps with --target-map)"));
    if (checkpoint.isPipeline())
      summary.applies.push_back("ds-retarget --pp");
    if (checkpoint.getAutoEpSize())
      summary.applies.push_back("ds-retarget --autoep-size");
    summary.applies.push_back("export");
  }
  if (checkpoint.isPipeline())
    summary.format += ", pipeline";
  if (summary.ep)
    summary.format += ", AutoEP";
}

llvm::Expected<CheckpointSummary> ucp::summarizeCheckpoint(llvm::StringRef path) {
  CheckpointSummary summary;
  summary.path = followCheckpointPointer(path, summary.pointer);
  CheckpointFormat format = detectCheckpointFormat(summary.path);
  std::unique_ptr<CheckpointSource> source;
  const DeepSpeedCheckpoint *deepSpeed = nullptr;
  if (format == CheckpointFormat::Safetensors) {
    llvm::Expected<std::unique_ptr<CheckpointSource>> opened =
        openCheckpoint(summary.path);
    if (!opened)
      return opened.takeError();
    source = std::move(*opened);
  } else {
    llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> opened =
        format == CheckpointFormat::Universal
            ? DeepSpeedCheckpoint::openUniversal(summary.path)
            : DeepSpeedCheckpoint::open(summary.path);
    if (!opened)
      return opened.takeError();
    deepSpeed = opened->get();
    source = std::move(*opened);
  }
  summarizeTensors(*source, deepSpeed, summary);
  if (deepSpeed) {
    summarizeDeepSpeed(*deepSpeed, summary);
  } else {
    summary.format = "safetensors";
    summary.applies = {
        summary.tensors.size() > 1
            ? "convert --to deepspeed --param-groups FILE (the order the "
              "model lists its parameters)"
            : "convert --to deepspeed",
        "export (re-cut, another dtype)"};
  }
  measureDisk(summary.path, summary);
  return summary;
}

void ucp::printCheckpointSummary(const CheckpointSummary &summary,
                                 llvm::raw_ostream &os) {
  os << summary.path;
  if (!summary.pointer.empty())
    os << " (named by " << summary.pointer << ")";
  os << "\nformat: " << summary.format;
  if (!summary.deepSpeedVersion.empty())
    os << ", DeepSpeed " << summary.deepSpeedVersion;
  if (summary.step)
    os << ", step " << *summary.step;
  os << "\ngrid: PP " << summary.pp << " x TP " << summary.tp << " x DP "
     << summary.dp;
  if (summary.ep)
    os << ", EP " << summary.ep;
  if (summary.format.rfind("Universal", 0) == 0)
    os << " (the run it was converted from; the tensors are whole)";
  // Each state's dtypes, states in the order the tensors hold them.
  std::vector<std::pair<std::string, std::set<std::string>>> types;
  size_t trainable = 0, frozen = 0, buffers = 0;
  for (const TensorSummary &tensor : summary.tensors) {
    for (const auto &[state, type] : tensor.states) {
      auto entry = llvm::find_if(types, [&, &state = state](const auto &t) {
        return t.first == state;
      });
      if (entry == types.end())
        entry = types.insert(types.end(), {state, {}});
      entry->second.insert(type);
    }
    trainable += tensor.role == "trainable";
    frozen += tensor.role == "frozen";
    buffers += tensor.role == "buffer";
  }
  os << "\ndtypes: ";
  llvm::interleaveComma(types, os, [&](const auto &entry) {
    os << entry.first << " " << llvm::join(entry.second, "/");
  });
  os << "\nparameter groups: " << summary.groupSizes.size();
  if (!summary.groupSizes.empty()) {
    os << " (";
    llvm::interleaveComma(summary.groupSizes, os);
    os << " parameters)";
  }
  os << "\ntensors: " << summary.tensors.size() << " (" << trainable
     << " trainable, " << frozen << " frozen, " << buffers << " buffers)\n";
  size_t width = 4;
  for (const TensorSummary &tensor : summary.tensors)
    width = std::max(width, tensor.name.size());
  for (const TensorSummary &tensor : summary.tensors)
    os << "  " << llvm::left_justify(tensor.name, width) << "  "
       << llvm::left_justify(formatList(tensor.shape), 14) << "  "
       << llvm::left_justify(tensor.role, 9) << "  " << tensor.layout << "\n";
  os << "on disk: " << summary.files
     << (summary.files == 1 ? " file, " : " files, ")
     << llvm::format("%.3f", summary.bytesOnDisk / 1e6) << " MB\n";
  for (const std::string &command : summary.applies)
    os << "applies: " << command << "\n";
  for (const std::string &refusal : summary.refused)
    os << "refused: " << refusal << "\n";
}

llvm::json::Value ucp::toJson(const CheckpointSummary &summary) {
  llvm::json::Array tensors;
  for (const TensorSummary &tensor : summary.tensors) {
    llvm::json::Object states;
    for (const auto &[state, type] : tensor.states)
      states[state] = type;
    tensors.push_back(llvm::json::Object{
        {"name", tensor.name},
        {"shape", llvm::json::Array(tensor.shape)},
        {"role", tensor.role},
        {"states", std::move(states)},
        {"layout", tensor.layout}});
  }
  llvm::json::Object object{
      {"path", summary.path},
      {"format", summary.format},
      {"grid", llvm::json::Object{{"pp", summary.pp},
                                  {"tp", summary.tp},
                                  {"dp", summary.dp},
                                  {"ep", summary.ep}}},
      {"parameter_groups", llvm::json::Array(summary.groupSizes)},
      {"tensors", std::move(tensors)},
      {"files", int64_t(summary.files)},
      {"bytes_on_disk", summary.bytesOnDisk},
      {"applies", llvm::json::Array(summary.applies)},
      {"refused", llvm::json::Array(summary.refused)}};
  if (!summary.pointer.empty())
    object["pointer"] = summary.pointer;
  if (!summary.deepSpeedVersion.empty())
    object["deepspeed_version"] = summary.deepSpeedVersion;
  if (summary.step)
    object["step"] = *summary.step;
  return object;
}

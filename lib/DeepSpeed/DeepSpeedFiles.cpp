//===- DeepSpeedFiles.cpp - The files of a checkpoint folder --------------===//
//
// save_checkpoint names every file by its place in the grid:
//
//   ZeRO-1/2  mp_rank_<tp:02d>_model_states.pt             (per TP rank)
//   ZeRO-3    zero_pp_rank_<dp>_mp_rank_<tp:02d>_model_states.pt
//   both      [bf16_]zero_pp_rank_<dp>_mp_rank_<tp:02d>_optim_states.pt
//   AutoEP    layer_<moe layer>_expert_<expert>_mp_rank_<tp:02d>_model_states.pt
//             (ZeRO-1/2: one per routed expert, outside the grid)
//   pipeline  layer_<layer:02d>-model_states.pt, or with TP
//             layer_<layer:02d>-model_<tp:02d>-model_states.pt
//             (PipelineModule: one per layer and TP rank, its module weights)
//
// In a pipeline run the mp_rank of the other names counts the
// model-parallel ranks of every stage, stage-major (`stage * tp + t`).
//
// The grid is what the first model-state file records (dp_world_size and
// mp_world_size); every position must have its files, and no other file
// may be there.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <map>
#include <set>

using namespace ucp;
using llvm::Expected;
using llvm::StringRef;

namespace {
/// A file's kind and grid position, parsed from its name.
struct NamedFile {
  enum Kind { Model, Zero3Model, Optimizer, Expert, Layer } kind;
  int64_t dp = 0, tp = 0;
  /// Expert files: the AutoEP layer and the global expert id; layer files:
  /// the pipeline layer.
  int64_t layer = 0, expert = 0;
  std::string prefix;
};
} // namespace

/// Parses a checkpoint file name; nothing for names save_checkpoint does
/// not write.
static std::optional<NamedFile> parseName(StringRef name) {
  static const llvm::Regex model("^mp_rank_([0-9]+)_model_states\\.pt$");
  static const llvm::Regex zero3(
      "^zero_pp_rank_([0-9]+)_mp_rank_([0-9]+)_model_states\\.pt$");
  static const llvm::Regex optimizer(
      "^(bf16_)?zero_pp_rank_([0-9]+)_mp_rank_([0-9]+)_optim_states\\.pt$");
  static const llvm::Regex expert(
      "^layer_([0-9]+)_expert_([0-9]+)_mp_rank_([0-9]+)_model_states\\.pt$");
  static const llvm::Regex layer(
      "^layer_([0-9]+)-model_(([0-9]+)-model_)?states\\.pt$");
  llvm::SmallVector<StringRef, 4> parts;
  NamedFile file;
  auto number = [](StringRef text, int64_t &value) {
    return !text.getAsInteger(10, value) && value < kMaxWorldSize;
  };
  if (model.match(name, &parts)) {
    file.kind = NamedFile::Model;
    return number(parts[1], file.tp) ? std::optional(file) : std::nullopt;
  }
  if (zero3.match(name, &parts)) {
    file.kind = NamedFile::Zero3Model;
    return number(parts[1], file.dp) && number(parts[2], file.tp)
               ? std::optional(file)
               : std::nullopt;
  }
  if (optimizer.match(name, &parts)) {
    file.kind = NamedFile::Optimizer;
    file.prefix = parts[1].str();
    return number(parts[2], file.dp) && number(parts[3], file.tp)
               ? std::optional(file)
               : std::nullopt;
  }
  if (expert.match(name, &parts)) {
    file.kind = NamedFile::Expert;
    return number(parts[1], file.layer) && number(parts[2], file.expert) &&
                   number(parts[3], file.tp)
               ? std::optional(file)
               : std::nullopt;
  }
  if (layer.match(name, &parts)) {
    file.kind = NamedFile::Layer;
    file.tp = -1; // Not named: a run without TP.
    return number(parts[1], file.layer) &&
                   (parts[3].empty() || number(parts[3], file.tp))
               ? std::optional(file)
               : std::nullopt;
  }
  return std::nullopt;
}

/// The file name save_checkpoint gives `kind` at (dp, tp).
static std::string formatName(NamedFile::Kind kind, StringRef prefix,
                              int64_t dp, int64_t tp) {
  std::string tpText = llvm::formatv("{0:d2}", tp).str();
  switch (kind) {
  case NamedFile::Model:
    return "mp_rank_" + tpText + "_model_states.pt";
  case NamedFile::Zero3Model:
    return "zero_pp_rank_" + std::to_string(dp) + "_mp_rank_" + tpText +
           "_model_states.pt";
  case NamedFile::Optimizer:
    return prefix.str() + "zero_pp_rank_" + std::to_string(dp) + "_mp_rank_" +
           tpText + "_optim_states.pt";
  case NamedFile::Expert:
  case NamedFile::Layer:
    break; // Named by layer, not by grid position.
  }
  return "";
}

Expected<FolderScan> ucp::scanCheckpointFolder(StringRef folder) {
  if (!llvm::sys::fs::is_directory(folder))
    return makeError(folder +
                     ": not a folder (a checkpoint is CKPT/TAG, the "
                     "folder save_checkpoint writes its .pt files in)");
  FolderScan scan;
  scan.folder = folder.str();
  std::set<bool> zero3;
  std::set<std::string> prefixes;
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(folder, error), end;
       it != end && !error; it.increment(error)) {
    StringRef name = llvm::sys::path::filename(it->path());
    if (!name.ends_with(".pt"))
      continue;
    std::optional<NamedFile> parsed = parseName(name);
    if (!parsed)
      return makeError(it->path() + ": not a file save_checkpoint writes; move "
                                    "it out of the checkpoint folder");
    if (parsed->kind == NamedFile::Expert) {
      scan.expertFiles[{parsed->layer, parsed->expert}].push_back(it->path());
      continue;
    }
    if (parsed->kind == NamedFile::Layer) {
      if (!scan.layerFiles[parsed->layer].emplace(parsed->tp, it->path()).second)
        return makeError(it->path() + ": a second file of pipeline layer " +
                         std::to_string(parsed->layer) + " and TP rank " +
                         std::to_string(parsed->tp) +
                         " (named with and without its TP rank)");
      continue;
    }
    if (parsed->kind == NamedFile::Optimizer)
      prefixes.insert(parsed->prefix);
    else
      zero3.insert(parsed->kind == NamedFile::Zero3Model);
    scan.names.insert(name.str());
  }
  if (error)
    return makeError(folder + ": " + error.message());
  if (zero3.empty() || prefixes.empty())
    return makeError(folder + ": no " +
                     (zero3.empty() ? "model" : "optimizer") +
                     "-state files (mp_rank_*_model_states.pt, "
                     "*zero_pp_rank_*_optim_states.pt): not a DeepSpeed ZeRO "
                     "checkpoint folder");
  if (zero3.size() > 1)
    return makeError(folder + ": holds the model-state files of both ZeRO-1/2 "
                              "and ZeRO-3 runs");
  if (prefixes.size() > 1)
    return makeError(folder + ": holds optimizer files with and without the "
                              "bf16_ prefix, of two runs");
  scan.zero3 = *zero3.begin();
  scan.prefix = *prefixes.begin();
  return scan;
}

std::string ucp::getFirstModelFile(const FolderScan &scan) {
  return scan.folder + "/" +
         formatName(scan.zero3 ? NamedFile::Zero3Model : NamedFile::Model, "",
                    0, 0);
}

std::string ucp::describeGrid(int64_t dp, int64_t pp, int64_t tp) {
  return std::to_string(dp) + " DP x " +
         (pp > 1 ? std::to_string(pp) + " PP x " : std::string()) +
         std::to_string(tp) + " TP ranks";
}

Expected<CheckpointFiles> ucp::selectGridFiles(const FolderScan &scan,
                                               int64_t pp, int64_t tp,
                                               int64_t dp) {
  int64_t mp = pp * tp;
  CheckpointFiles result{scan.zero3, pp, tp, mp, dp, {}, {}, scan.expertFiles,
                         {}};
  std::string grid = describeGrid(dp, pp, tp);
  std::set<std::string> unused = scan.names;
  NamedFile::Kind modelKind =
      scan.zero3 ? NamedFile::Zero3Model : NamedFile::Model;
  auto require = [&](NamedFile::Kind kind, int64_t d, int64_t m,
                     std::vector<std::string> &into) -> llvm::Error {
    std::string name = formatName(kind, scan.prefix, d, m);
    if (!unused.erase(name))
      return makeError(scan.folder + ": " + name +
                       " is missing from the run's grid of " + grid);
    into.push_back(scan.folder + "/" + name);
    return llvm::Error::success();
  };
  for (int64_t d = 0; d < dp; ++d)
    for (int64_t m = 0; m < mp; ++m) {
      if (scan.zero3 || d == 0)
        if (llvm::Error error = require(modelKind, d, m, result.modelFiles))
          return std::move(error);
      if (llvm::Error error =
              require(NamedFile::Optimizer, d, m, result.optimizerFiles))
        return std::move(error);
    }
  if (!unused.empty())
    return makeError(scan.folder + "/" + *unused.begin() +
                     ": outside the run's grid of " + grid +
                     ": the folder mixes the files of two runs");
  // Layer files are a pipeline run's, one per TP rank, named with it only
  // when there is TP.
  for (const auto &[layer, ranks] : scan.layerFiles)
    for (const auto &[t, path] : ranks) {
      if (tp > 1 ? t < 0 || t >= tp : t != -1)
        return makeError(path + ": outside the run's grid of " + grid +
                         (tp > 1 ? " (with TP, a layer file names its TP "
                                   "rank: layer_XX-model_YY-model_states.pt)"
                                 : " (without TP, a layer file is "
                                   "layer_XX-model_states.pt)"));
      result.layerFiles[layer][std::max<int64_t>(t, 0)] = path;
    }
  return result;
}

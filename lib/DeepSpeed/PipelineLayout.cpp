//===- PipelineLayout.cpp - How a PipelineModule lays out its layers ------===//

#include "ucp/DeepSpeed/PipelineLayout.h"
#include "ucp/Canonical/LocationAssignment.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <map>
#include <numeric>

using namespace ucp;
using llvm::Expected;

std::vector<int64_t> ucp::getUniformPartition(int64_t layers, int64_t stages) {
  std::vector<int64_t> parts(stages + 1, 0);
  if (layers <= stages) {
    for (int64_t s = 0; s <= stages; ++s)
      parts[s] = std::min(s, layers);
    return parts;
  }
  int64_t chunk = layers / stages, residual = layers - chunk * stages;
  for (int64_t s = 0; s <= stages; ++s)
    parts[s] = s * chunk + std::min(s, residual);
  return parts;
}

Expected<std::vector<int64_t>>
ucp::parsePipelinePartition(llvm::StringRef text, int64_t stages) {
  std::string given = text.str();
  auto refuse = [&](const std::string &why) {
    return makeError("--pp-partition " + given + ": " + why);
  };
  int64_t layers = 0;
  if (text.consume_front("uniform:")) {
    if (text.getAsInteger(10, layers) || layers < stages)
      return refuse("expected uniform:L, L the number of layers, at least " +
                    std::to_string(stages) + " (one per stage)");
    return getUniformPartition(layers, stages);
  }
  llvm::SmallVector<llvm::StringRef> fields;
  text.split(fields, ',');
  std::vector<int64_t> parts;
  for (llvm::StringRef field : fields) {
    int64_t bound = 0;
    if (field.trim().getAsInteger(10, bound) || bound < 0)
      return refuse("'" + field.str() + "' is not a layer index");
    if (!parts.empty() && bound <= parts.back())
      return refuse("the boundaries must increase (every stage runs a layer)");
    parts.push_back(bound);
  }
  if (parts.size() != size_t(stages) + 1 || parts.front() != 0)
    return refuse("expected " + std::to_string(stages + 1) +
                  " boundaries from 0 (stage s runs layers [B_s, B_s+1)), "
                  "or uniform:L");
  return parts;
}

std::optional<int64_t> ucp::getStageOfLayer(llvm::ArrayRef<int64_t> parts,
                                            int64_t layer) {
  if (parts.size() < 2 || layer < parts.front() || layer >= parts.back())
    return std::nullopt;
  return std::upper_bound(parts.begin(), parts.end(), layer) - parts.begin() -
         1;
}

std::optional<std::pair<int64_t, std::string>>
ucp::splitLayerName(llvm::StringRef name) {
  auto [index, rest] = name.split('.');
  int64_t layer = 0;
  if (rest.empty() || index.getAsInteger(10, layer) || layer < 0)
    return std::nullopt;
  return std::pair{layer, rest.str()};
}

std::optional<llvm::StringRef> ucp::getTiedKey(llvm::StringRef name) {
  if (!name.consume_front("tied_modules."))
    return std::nullopt;
  auto [key, rest] = name.split('.');
  if (key.empty() || rest.empty())
    return std::nullopt;
  return key;
}

std::vector<size_t> ucp::orderStageParams(
    llvm::ArrayRef<std::string> names,
    llvm::function_ref<int64_t(llvm::StringRef key)> firstUse) {
  // (0, first use) for a tied module's, (1, layer) for a layer's; a name
  // of neither kind last.
  std::vector<std::pair<int, int64_t>> keys;
  for (const std::string &name : names) {
    if (std::optional<llvm::StringRef> key = getTiedKey(name))
      keys.push_back({0, firstUse(*key)});
    else if (auto split = splitLayerName(name))
      keys.push_back({1, split->first});
    else
      keys.push_back({2, 0});
  }
  std::vector<size_t> order(names.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::stable_sort(order, [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  return order;
}

std::vector<size_t> ucp::orderModuleKeys(llvm::ArrayRef<std::string> keys,
                                         llvm::ArrayRef<size_t> groups) {
  // The submodules, by first appearance in `keys`.
  std::vector<llvm::StringRef> modules;
  std::vector<size_t> moduleOf;
  for (llvm::StringRef key : keys) {
    llvm::StringRef module = key.rsplit('.').second.empty()
                                 ? llvm::StringRef()
                                 : key.rsplit('.').first;
    auto found = llvm::find(modules, module);
    moduleOf.push_back(found - modules.begin());
    if (found == modules.end())
      modules.push_back(module);
  }
  // Each group orders the submodules it lists: an edge from each to the
  // next.
  size_t count = modules.size();
  std::vector<std::vector<size_t>> after(count);
  std::vector<size_t> before(count, 0);
  std::map<size_t, size_t> lastOfGroup;
  for (auto [i, module] : llvm::enumerate(moduleOf)) {
    auto [last, added] = lastOfGroup.try_emplace(groups[i], module);
    if (!added && last->second != module) {
      after[last->second].push_back(module);
      ++before[module];
      last->second = module;
    }
  }
  // Kahn's merge, the first-appearing submodule first among the free; a
  // cycle (groups that disagree) leaves the rest in order of appearance.
  std::vector<size_t> merged;
  std::vector<bool> placed(count, false);
  while (merged.size() < count) {
    size_t next = count;
    for (size_t m = 0; m < count && next == count; ++m)
      if (!placed[m] && before[m] == 0)
        next = m;
    for (size_t m = 0; m < count && next == count; ++m)
      if (!placed[m])
        next = m;
    placed[next] = true;
    merged.push_back(next);
    for (size_t m : after[next])
      if (before[m] > 0)
        --before[m];
  }
  std::vector<size_t> order;
  for (size_t module : merged)
    for (size_t i = 0; i < keys.size(); ++i)
      if (moduleOf[i] == module)
        order.push_back(i);
  return order;
}

Expected<ParamMap> ucp::placeOnStages(const ParamMap &stageMap,
                                      llvm::ArrayRef<int64_t> stages,
                                      int64_t tp, int64_t pp) {
  ParamMap map{stageMap.name, stageMap.logicalShape, pp * tp, {},
               stageMap.originalVocabSize};
  for (int64_t stage : stages) {
    int64_t first = stage * tp;
    for (Shard shard : stageMap.shards) {
      shard.rank += first;
      for (Piece &piece : shard.pieces)
        for (int64_t &location : piece.locations)
          location += first;
      map.shards.push_back(std::move(shard));
    }
  }
  // Copies on several stages hold the same blocks: replicas.
  return stages.size() > 1 ? assignLocations(map) : Expected<ParamMap>(map);
}

ParamMap ucp::getStageMap(const ParamMap &map, int64_t stage, int64_t tp) {
  int64_t first = stage * tp;
  auto inStage = [&](int64_t rank) {
    return rank >= first && rank < first + tp;
  };
  ParamMap stageMap{map.name, map.logicalShape, tp, {},
                    map.originalVocabSize};
  for (const Shard &shard : map.shards) {
    if (!inStage(shard.rank))
      continue;
    Shard &copy = stageMap.shards.emplace_back(shard);
    copy.rank -= first;
    for (Piece &piece : copy.pieces) {
      llvm::SmallVector<int64_t, 4> kept;
      for (int64_t location : piece.locations)
        if (inStage(location))
          kept.push_back(location - first);
      piece.locations = std::move(kept);
    }
  }
  return stageMap;
}

//===- RetargetModelStates.cpp - The target's model-state files -----------===//
//
// A model-state file of the target is the source's of the same TP rank with
// what the topology decides replaced: dp_world_size, the stage, the frozen
// records' empty form, and the module's weights. ZeRO-1/2 keeps each
// group's low-precision weights as views of one flat buffer, padded for the
// DP degree (the source's buffer, re-padded, or rebuilt from the fp32
// masters of a ZeRO-3 source); ZeRO-3 keeps an empty placeholder per
// weight, in one file per grid rank.
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"

#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace path = llvm::sys::path;

Error Retargeter::replaceModuleWeights(
    const PickleCursor &module, size_t g, int64_t t, int64_t &nextKey,
    PickleBuilder &b, llvm::DenseMap<PickleRef, PickleRef> &replaced,
    std::vector<NewStorage> &storages) const {
  const PickleDocument &from = module.getDocument();
  const ZeroGroupLayout &layout = layouts[g][t];
  // Each weight's tensor, checked where the source's partitioning puts it:
  // ZeRO-1/2 at its offset in the group's one flat buffer (the same at
  // every DP degree; an AutoEP run saves each weight as a clone of its
  // own), ZeRO-3 as an empty placeholder of its own.
  std::vector<PickleRef> tensors;
  int64_t offset = 0;
  bool clones = checkpoint.getAutoEpSize() && !isZero3Source();
  llvm::ArrayRef<size_t> params = getGroupParams(g, t);
  for (size_t p : params) {
    const DeepSpeedParam &param = checkpoint.getParams()[p];
    std::optional<PickleCursor> tensor = module.find(param.name);
    bool placed =
        tensor && tensor->is(PickleValue::Tensor) &&
        (isZero3Source() ? tensor->get().shape == Extents{0}
         : clones        ? tensor->get().shape == param.tpShapes[0]
                         : tensor->get().offset == offset &&
                        (tensors.empty() ||
                         from.get(tensor->get().storage).text ==
                             from.get(from.get(tensors[0]).storage).text));
    if (!placed)
      return makeError(
          module.getPath() + "['" + param.name + "']: not where ZeRO-" +
          std::to_string(checkpoint.getZeroStage()) + " puts the weight");
    tensors.push_back(tensor->getRef());
    offset += *getNumElements(param.tpShapes[getTemplateRank(t)]);
  }
  // Placeholders, and clones at the same TP degree and stage form, stay as
  // they are.
  if (tensors.empty() || (isZero3Source() && isZero3Target()) || clones)
    return Error::success();
  DType type = from.get(from.get(tensors[0]).storage).dtype;
  if (isZero3Target()) {
    for (PickleRef tensor : tensors) {
      std::string key = std::to_string(nextKey++);
      replaced[tensor] = b.tensor(b.storage(key, type, 0), 0, {0}, {1},
                                  from.get(tensor).requiresGrad);
      storages.push_back({NewStorage::Empty, key, type, g, 0, 0, 0});
    }
    return Error::success();
  }
  if (!rebuildsWeights()) {
    // The source's flat buffer (each tensor names it by key; the storage
    // values may be several), longer or shorter.
    const PickleValue &first = from.get(from.get(tensors[0]).storage);
    PickleRef storage =
        b.storage(first.text, first.dtype, layout.getPaddedLength());
    for (PickleRef ref = 0; ref < from.size(); ++ref)
      if (from.get(ref).kind == PickleValue::Storage &&
          from.get(ref).text == first.text)
        replaced[ref] = storage;
    storages.push_back({NewStorage::SourceWeights, first.text, first.dtype, g,
                        0, layout.getPaddedLength(), layout.total});
    return Error::success();
  }
  if (type != DType::F32 && type != DType::BF16 && type != DType::F16)
    return makeError(module.getPath() + ": weights of dtype " +
                     getSafetensorsName(type) +
                     " cannot be rebuilt from fp32 masters");
  std::string key = std::to_string(nextKey++);
  PickleRef storage = b.storage(key, type, layout.getPaddedLength());
  for (auto [i, tensor] : llvm::enumerate(tensors)) {
    const Extents &shape = tpShapes[params[i]][t];
    replaced[tensor] =
        b.tensor(storage, layout.offsets[i], shape, getRowMajorStrides(shape),
                 from.get(tensor).requiresGrad);
  }
  storages.push_back({NewStorage::MasterWeights, key, type, g, 0,
                      layout.getPaddedLength(), layout.total});
  return Error::success();
}

Expected<Retargeter::TargetFile> Retargeter::buildModelStates(int64_t d,
                                                              int64_t t) const {
  const TorchFile &source = *checkpoint.getModelFiles()[getTemplateRank(t)];
  const PickleDocument &from = source.getDocument();
  PickleCursor root(from);
  auto inSource = [&](Error error) {
    return makeError(source.getPath() + ": " +
                     llvm::toString(std::move(error)));
  };
  Expected<PickleCursor> module = root.at("module");
  if (!module)
    return inSource(module.takeError());
  PickleBuilder b;
  llvm::DenseMap<PickleRef, PickleRef> replaced;
  TargetFile file;
  int64_t nextKey = getNextStorageKey(from);
  // A pipeline's module weights are in its layer files, its module None.
  for (size_t g = 0; g < groups.size() && !module->is(PickleValue::None); ++g)
    if (!isExpertGroup(g)) // Experts are not in the module.
      if (Error error = replaceModuleWeights(*module, g, t, nextKey, b,
                                             replaced, file.storages))
        return inSource(std::move(error));
  if (!module->is(PickleValue::None))
    if (Error error = replaceFrozenParams(root, *module, d, t, nextKey, b,
                                          replaced, file.storages))
      return inSource(std::move(error));
  // At ZeRO stage 0 (BF16_Optimizer) the model states hold the optimizer
  // too, as DP rank 0's optimizer file does: DeepSpeed restores it from
  // here.
  if (std::optional<PickleCursor> optimizer = root.find("optimizer");
      optimizer && !optimizer->is(PickleValue::None))
    if (Error error = replaceOptimizerStates(source, *optimizer, 0, t, nextKey,
                                             b, replaced, file.storages))
      return std::move(error);
  replaceZeroStage(root, b, replaced);
  if (changesTpMaps())
    replaceTensorParallel(root, t, b, replaced);
  if (changesStages())
    replacePipeline(root, t, b, replaced);
  if (epSize)
    replaceExpertParallel(root, d * getModelParallelDegree() + t, b, replaced);
  // The root's values the topology changes; the rest as they were.
  std::vector<std::pair<PickleRef, PickleRef>> items;
  Expected<std::vector<std::pair<std::string, PickleCursor>>> entries =
      root.getStringItems();
  if (!entries)
    return inSource(entries.takeError());
  for (const auto &[key, value] : *entries) {
    PickleRef copy = b.copy(from, value.getRef(), replaced);
    if (key == "dp_world_size")
      copy = b.integer(options.dp);
    if (key == "mp_world_size")
      copy = b.integer(getModelParallelDegree());
    // ZeRO-1 records no frozen parameters as None, ZeRO-2 and 3 as empty
    // dicts.
    bool none = value.is(PickleValue::None) ||
                (value.is(PickleValue::Dict) && value.get().items.empty());
    if ((key == "frozen_param_shapes" || key == "frozen_param_fragments") &&
        none && frozenTensors.empty())
      copy = stage == 1 ? b.none() : b.dict({}, /*ordered=*/true);
    items.push_back({b.string(key), copy});
  }
  if (!root.find("universal_checkpoint_info"))
    if (std::optional<PickleRef> map = buildAffineMap(b))
      items.push_back({b.string("universal_checkpoint_info"),
                       b.dict({{b.string("affine_map"), *map}})});
  file.document = b.finish(b.dict(items, root.get().module == "collections"));
  return file;
}

Error Retargeter::writeModelStates(int64_t d, int64_t t,
                                    llvm::StringRef folder) {
  const TorchFile &source = *checkpoint.getModelFiles()[getTemplateRank(t)];
  std::string tpRank = llvm::formatv("{0:d2}", t).str();
  // ZeRO-3: one file per DP rank (the same but for AutoEP's records of the
  // rank).
  Expected<TargetFile> built = buildModelStates(d, t);
  if (!built)
    return built.takeError();
  llvm::SmallString<256> file(folder);
  path::append(file, isZero3Target()
                         ? "zero_pp_rank_" + std::to_string(d) + "_mp_rank_" +
                               tpRank + "_model_states.pt"
                         : "mp_rank_" + tpRank + "_model_states.pt");
  return writeTargetFile(file, *built, source, d, t,
                         /*releaseSource=*/!isZero3Target());
}

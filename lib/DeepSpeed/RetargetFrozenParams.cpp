//===- RetargetFrozenParams.cpp - Frozen parameters in the target --------===//
//
// A frozen parameter (requires_grad=False) has no optimizer state; the
// model states keep it, in one of three forms: ZeRO-1 whole in the module
// only (frozen_param_shapes and frozen_param_fragments None); ZeRO-2 whole
// in the module and in frozen_param_fragments (one storage); ZeRO-3 an
// empty placeholder in the module and, in each DP rank's
// frozen_param_fragments, that rank's ceil(numel / dp) elements of the
// flattened tensor, zero-padded at the end; with TP, each TP rank its
// shard so. Where the forms differ, or ZeRO-3's DP degree, or the TP maps,
// the records are rebuilt from the checkpoint's frozen tensors; where new
// bytes are needed, each frozen parameter is planned from its map in the
// source to its map in the target, and each target rank's shard is run
// from the source bytes, as any parameter's.
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"

#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/ProgramDriver.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Planner.h"
#include "ucp/Support/Error.h"


using namespace ucp;
using llvm::Error;
using llvm::Expected;

bool ucp::hasFrozenParams(const DeepSpeedCheckpoint &checkpoint) {
  if (llvm::any_of(checkpoint.getTensors(), [](const CheckpointTensor &t) {
        return t.role == CheckpointTensor::Role::Frozen;
      }))
    return true;
  PickleCursor root(checkpoint.getModelFiles().front()->getDocument());
  std::optional<PickleCursor> frozen = root.find("frozen_param_fragments");
  return frozen && frozen->is(PickleValue::Dict) &&
         !frozen->get().items.empty();
}

/// The form stage `stage` keeps frozen parameters in: 1 (BF16_Optimizer's
/// stage 0 included), 2 or 3.
static int getFrozenForm(int stage) { return std::max(stage, 1); }

bool Retargeter::rewritesFrozenParams() const {
  return isZero3Source() || isZero3Target() || changesTpMaps() ||
         getFrozenForm(checkpoint.getZeroStage()) != getFrozenForm(stage);
}

Retargeter::FrozenSlots Retargeter::getFrozenSlots(int64_t elements,
                                                   int64_t d) const {
  if (!isZero3Target())
    return {elements, elements};
  ZeroGroupLayout layout = layOutZeroGroup({elements}, options.dp, stage);
  return {layout.partition, layout.getSlice(0, d).count};
}

Expected<ParamMap>
Retargeter::getFrozenTargetTpMap(const CheckpointTensor &frozen) const {
  if (!changesTpMaps()) {
    if (const ParamMap *map = checkpoint.getFrozenTpMap(frozen.name))
      return *map;
    return makeError("frozen parameter '" + frozen.name +
                     "': the checkpoint records no TP map of it");
  }
  for (const ParamMap &map : options.targetMaps)
    if (map.name == frozen.name) {
      if (map.logicalShape != frozen.map.logicalShape)
        return makeError("--target-map: frozen parameter '" + frozen.name +
                         "' is mapped as " + formatList(map.logicalShape) +
                         ", and the checkpoint's is " +
                         formatList(frozen.map.logicalShape));
      return map;
    }
  if (!options.targetMaps.empty())
    return makeError("--target-map: no map of frozen parameter '" +
                     frozen.name + "'");
  // Recorded where the checkpoint was retargeted from this degree.
  if (const std::optional<LegacyCategories> &recorded =
          checkpoint.getCategories()) {
    auto atTarget = recorded->mapsAtDegree.find(tp);
    if (atTarget != recorded->mapsAtDegree.end())
      if (auto map = atTarget->second.find(frozen.name);
          map != atTarget->second.end())
        return map->second;
  }
  if (tp == 1) // Every tensor is whole.
    return getWholeTensorMap(frozen.name, frozen.map.logicalShape);
  return makeError("frozen parameter '" + frozen.name + "': no split rule "
                   "gives it at TP " + std::to_string(tp) +
                   " (universal_checkpoint_info's rules are for "
                   "trainable parameters): give the target's maps with "
                   "--target-map");
}

Error Retargeter::planFrozenParams() {
  if (!rewritesFrozenParams())
    return Error::success(); // The source's records stay.
  // A tensor the reader knows of but could not bind (frozen parameters of
  // a form it does not read) would be left behind.
  if (hasFrozenParams(checkpoint))
    if (Error error = checkpoint.checkComplete())
      return error;
  llvm::ArrayRef<CheckpointTensor> tensors = checkpoint.getTensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].role != CheckpointTensor::Role::Frozen)
      continue;
    const CheckpointTensor &frozen = tensors[i];
    // The target's TP map, each TP shard whole or in ZeRO-3's slots (the
    // shards' shapes kept for the records).
    Expected<ParamMap> tpMap = getFrozenTargetTpMap(frozen);
    if (!tpMap)
      return tpMap.takeError();
    std::vector<Extents> &shapes = frozenShapes.emplace_back();
    for (int64_t t = 0; t < tp; ++t)
      for (const Shard &shard : tpMap->shards)
        if (shard.rank == t) {
          shapes.push_back(shard.shape);
          break;
        }
    Expected<ParamMap> target =
        nestZero3Slots(*tpMap, isZero3Target() ? options.dp : 1);
    if (!target)
      return target.takeError();
    Expected<TransferPrograms> planned =
        planTransfers(frozen.map, *target, {ReplicaPolicy::Lowest});
    if (!planned)
      return planned.takeError();
    frozenPrograms.merge(*planned);
    frozenTensors.push_back(i);
  }
  return Error::success();
}

Error Retargeter::replaceFrozenParams(
    const PickleCursor &root, const PickleCursor &module, int64_t d,
    int64_t t, int64_t &nextKey, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced,
    std::vector<NewStorage> &storages) const {
  if (!rewritesFrozenParams())
    return Error::success();
  const PickleDocument &from = root.getDocument();
  std::vector<std::pair<PickleRef, PickleRef>> shapes, fragments;
  for (auto [f, index] : llvm::enumerate(frozenTensors)) {
    const CheckpointTensor &frozen = checkpoint.getTensors()[index];
    const Extents &shape = frozenShapes[f][t];
    Expected<PickleCursor> weight = module.at(frozen.name);
    if (!weight)
      return weight.takeError();
    if (!weight->is(PickleValue::Tensor))
      return makeError(weight->getPath() + ": not a tensor");
    bool requiresGrad = from.get(weight->getRef()).requiresGrad;
    DType type = frozen.states.front().second;
    FrozenSlots slots = getFrozenSlots(*getNumElements(shape), d);
    PickleRef fragment;
    if (isZero3Target() || isZero3Source() || changesTpMaps()) {
      // New bytes: ZeRO-3's slots, or the whole TP shard.
      std::string key = std::to_string(nextKey++);
      PickleRef storage = b.storage(key, type, slots.elements);
      NewStorage filled{NewStorage::Frozen, key, type, index, 0,
                        slots.elements, slots.kept};
      filled.rank = isZero3Target() ? d * tp + t : t;
      storages.push_back(filled);
      fragment = isZero3Target()
                     ? b.tensor(storage, 0, {slots.elements}, {1}, requiresGrad)
                     : b.tensor(storage, 0, shape, getRowMajorStrides(shape),
                                requiresGrad);
    } else {
      // The module's own tensor, whole in both forms.
      fragment = b.copy(from, weight->getRef(), replaced);
    }
    if (isZero3Target()) {
      std::string empty = std::to_string(nextKey++);
      replaced[weight->getRef()] =
          b.tensor(b.storage(empty, type, 0), 0, {0}, {1}, requiresGrad);
      storages.push_back({NewStorage::Empty, empty, type, 0, 0, 0, 0});
    } else {
      replaced[weight->getRef()] = fragment; // One storage, as ZeRO-2's.
    }
    shapes.push_back({b.string(frozen.name), b.size(shape)});
    fragments.push_back({b.string(frozen.name), fragment});
  }
  // ZeRO-1 records them nowhere but the module.
  bool none = getFrozenForm(stage) == 1;
  if (std::optional<PickleCursor> old = root.find("frozen_param_shapes"))
    replaced[old->getRef()] = none ? b.none() : b.dict(shapes, true);
  if (std::optional<PickleCursor> old = root.find("frozen_param_fragments"))
    replaced[old->getRef()] = none ? b.none() : b.dict(fragments, true);
  return Error::success();
}

void Retargeter::buildFrozenShard(const NewStorage &storage,
                                  std::vector<char> &out) const {
  const CheckpointTensor &frozen = checkpoint.getTensors()[storage.group];
  int64_t size = getElementSize(storage.type);
  // The real elements, then zeros for ZeRO-3's padding.
  out.assign(storage.elements * size, '\0');
  ProgramRun run = checkpoint.getRun(storage.group, TensorState::Weight,
                                     frozenPrograms.at(frozen.name));
  CpuExecutor cpu(/*threads=*/1);
  // The CPU executor does not fail.
  llvm::cantFail(runIntoTargetAs(
      run, storage.rank, storage.kept, storage.type, out.data(), cpu,
      checkpoint.getReleaser(storage.group, TensorState::Weight)));
}

//===- RetargetFrozenParams.cpp - Frozen parameters at another stage ------===//
//
// A frozen parameter (requires_grad=False) has no optimizer state; the
// model states keep it. ZeRO-1/2 keeps it whole, in the module and in
// frozen_param_fragments (one storage); ZeRO-3 keeps an empty placeholder
// in the module and, in each DP rank's frozen_param_fragments, that rank's
// ceil(numel / dp) elements of the flattened tensor, zero-padded at the
// end. Where the source or the target is ZeRO-3, each frozen parameter is
// planned from its map in the source (whole, or ZeRO-3's fragments) to its
// map in the target, and each target rank's shard is run from the source
// bytes, as any parameter's.
//
//===----------------------------------------------------------------------===//

#include "Retargeter.h"

#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Engine/ProgramDriver.h"
#include "ucp/Layout/NestedLayout.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/Planner.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringSet.h"

#include <algorithm>

using namespace ucp;
using llvm::Error;
using llvm::Expected;

bool ucp::hasFrozenParams(const DeepSpeedCheckpoint &checkpoint) {
  PickleCursor root(checkpoint.getModelFiles().front()->getDocument());
  std::optional<PickleCursor> frozen = root.find("frozen_param_fragments");
  return frozen && frozen->is(PickleValue::Dict) &&
         !frozen->get().items.empty();
}

Retargeter::FrozenSlots Retargeter::getFrozenSlots(int64_t elements,
                                                   int64_t d) const {
  if (!isZero3Target())
    return {elements, elements};
  int64_t slots = (elements + options.dp - 1) / options.dp;
  return {slots, std::clamp<int64_t>(elements - d * slots, 0, slots)};
}

Error Retargeter::planFrozenParams() {
  if (!isZero3Source() && !isZero3Target())
    return Error::success(); // Whole in both: the source's stay.
  llvm::ArrayRef<CheckpointTensor> tensors = checkpoint.getTensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].role != CheckpointTensor::Role::Frozen)
      continue;
    const CheckpointTensor &frozen = tensors[i];
    int64_t elements = *getNumElements(frozen.map.logicalShape);
    Expected<ParamMap> target = [&]() -> Expected<ParamMap> {
      if (!isZero3Target())
        return getWholeTensorMap(frozen.name, frozen.map.logicalShape);
      std::vector<int64_t> sizes;
      for (int64_t d = 0; d < options.dp; ++d)
        sizes.push_back(getFrozenSlots(elements, d).kept);
      return buildFlatRangeLayout(frozen.name, frozen.map.logicalShape, sizes);
    }();
    if (!target)
      return target.takeError();
    Expected<TransferPrograms> planned =
        planTransfers(frozen.map, *target, {ReplicaPolicy::Lowest});
    if (!planned)
      return planned.takeError();
    frozenPrograms.merge(*planned);
    frozenTensors.push_back(i);
  }
  // A tensor the reader knows of but could not bind (frozen parameters of
  // a form it does not read) would be left behind.
  return hasFrozenParams(checkpoint) ? checkpoint.checkComplete()
                                     : Error::success();
}

/// The first of `module`'s tensors that is none of `checkpoint`'s
/// (trainable parameters, buffers, frozen parameters, aliases), if any.
static std::optional<std::string>
findUnknownModuleTensor(const DeepSpeedCheckpoint &checkpoint,
                        const PickleCursor &module) {
  llvm::StringSet<> known;
  for (const DeepSpeedParam &param : checkpoint.getParams())
    known.insert(param.name);
  for (const CheckpointTensor &tensor : checkpoint.getTensors())
    known.insert(tensor.name);
  for (const auto &[alias, name] : checkpoint.getAliases())
    known.insert(alias);
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      module.getStringItems();
  if (!items) {
    llvm::consumeError(items.takeError());
    return std::nullopt;
  }
  for (const auto &[name, value] : *items)
    if (!known.contains(name))
      return name;
  return std::nullopt;
}

Error Retargeter::replaceFrozenParams(
    const PickleCursor &root, const PickleCursor &module, int64_t d,
    int64_t &nextKey, PickleBuilder &b,
    llvm::DenseMap<PickleRef, PickleRef> &replaced,
    std::vector<NewStorage> &storages) const {
  if (isZero3Target() && !isZero3Source())
    // ZeRO-1 records no frozen parameters: one in its module would be
    // written whole where ZeRO-3 keeps a placeholder.
    if (std::optional<std::string> name =
            findUnknownModuleTensor(checkpoint, module))
      return makeError(module.getPath() + "[\"" + *name +
                       "\"]: neither a trainable parameter nor a buffer nor "
                       "in frozen_param_shapes (ZeRO-1 records frozen "
                       "parameters nowhere else), so its ZeRO-3 form is "
                       "unknown");
  if (frozenTensors.empty())
    return Error::success();
  Expected<PickleCursor> fragments = root.at("frozen_param_fragments");
  if (!fragments)
    return fragments.takeError();
  const PickleDocument &from = root.getDocument();
  for (size_t index : frozenTensors) {
    const CheckpointTensor &frozen = checkpoint.getTensors()[index];
    Expected<PickleCursor> weight = module.at(frozen.name);
    Expected<PickleCursor> fragment = fragments->at(frozen.name);
    if (!weight || !fragment)
      return llvm::joinErrors(weight.takeError(), fragment.takeError());
    if (!weight->is(PickleValue::Tensor) || !fragment->is(PickleValue::Tensor))
      return makeError(weight->getPath() + ": not a tensor");
    bool requiresGrad = from.get(weight->getRef()).requiresGrad;
    DType type = frozen.states.front().second;
    FrozenSlots slots = getFrozenSlots(*getNumElements(frozen.map.logicalShape), d);
    std::string key = std::to_string(nextKey++);
    PickleRef storage = b.storage(key, type, slots.elements);
    storages.push_back(
        {NewStorage::Frozen, key, type, index, 0, slots.elements, slots.kept});
    if (isZero3Target()) {
      replaced[fragment->getRef()] =
          b.tensor(storage, 0, {slots.elements}, {1}, requiresGrad);
      std::string empty = std::to_string(nextKey++);
      replaced[weight->getRef()] =
          b.tensor(b.storage(empty, type, 0), 0, {0}, {1}, requiresGrad);
      storages.push_back({NewStorage::Empty, empty, type, 0, 0, 0, 0});
      continue;
    }
    // Whole: the module's tensor and the fragment share the storage.
    const Extents &shape = frozen.map.logicalShape;
    for (const PickleCursor &old : {*weight, *fragment})
      replaced[old.getRef()] = b.tensor(
          storage, 0, shape, getRowMajorStrides(shape), requiresGrad);
  }
  return Error::success();
}

void Retargeter::buildFrozenShard(const NewStorage &storage, int64_t d,
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
      run, isZero3Target() ? d : 0, storage.kept, storage.type, out.data(),
      cpu, checkpoint.getReleaser(storage.group, TensorState::Weight)));
}

//===- FrozenTensors.cpp - A checkpoint's frozen parameters ---------------===//
//
// A frozen parameter (requires_grad=False) has no optimizer state; the
// model states keep it, in one form per stage: ZeRO-1 whole in the module
// only (frozen_param_shapes and frozen_param_fragments None: its frozen
// parameters are the module's tensors no group, buffer or alias names);
// ZeRO-2 whole in the module and in frozen_param_fragments (one storage);
// ZeRO-3 an empty placeholder in the module and, in each DP rank's
// frozen_param_fragments, that rank's ceil(numel / dp) slots of the
// flattened tensor. With TP each rank keeps its TP shard so, the shard's
// shape in its own records. Each becomes a tensor whose map is its TP map
// (universal_checkpoint_info's, as a trainable parameter's) with each TP
// shard whole or cut into ZeRO-3's fragments.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/DeepSpeed/ZeroFlattening.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringSet.h"


using namespace ucp;
using llvm::Error;
using llvm::Expected;

std::vector<std::string>
DeepSpeedReader::findModuleOnlyTensors(const PickleCursor &root,
                                       const PickleCursor &module) const {
  llvm::StringSet<> named;
  for (const DeepSpeedParam &param : checkpoint.params)
    named.insert(param.name);
  for (const CheckpointTensor &tensor : checkpoint.tensors)
    named.insert(tensor.name);
  std::optional<PickleCursor> shared = root.find("shared_params");
  if (shared && shared->is(PickleValue::Dict)) {
    if (Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
            shared->getStringItems()) {
      for (const auto &item : *items)
        named.insert(item.first);
    } else {
      llvm::consumeError(items.takeError()); // addAliases names the error.
    }
  }
  std::vector<std::string> names;
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      module.getStringItems();
  if (!items) { // The module's items were read already.
    llvm::consumeError(items.takeError());
    return names;
  }
  for (const auto &[name, value] : *items)
    if (!named.contains(name) && value.is(PickleValue::Tensor))
      names.push_back(name);
  return names;
}

Error DeepSpeedReader::addFrozenParams(const PickleCursor &root,
                                       const PickleCursor &module) {
  const TorchFile &model = *checkpoint.modelFiles.front();
  std::optional<PickleCursor> frozen = root.find("frozen_param_shapes");
  std::vector<std::string> names;
  FrozenForm form = checkpoint.getZeroStage() == 3 ? FrozenForm::Zero3
                                                   : FrozenForm::Whole;
  if (frozen && frozen->is(PickleValue::None) &&
      module.is(PickleValue::Dict)) {
    names = findModuleOnlyTensors(root, module);
    form = FrozenForm::ModuleOnly;
  } else if (frozen && frozen->is(PickleValue::Dict)) {
    Expected<std::vector<std::pair<std::string, PickleCursor>>> shapes =
        frozen->getStringItems();
    if (!shapes)
      return makeError(model.getPath(), llvm::toString(shapes.takeError()));
    for (const auto &item : *shapes)
      names.push_back(item.first);
  }
  if (names.empty())
    return Error::success();
  // A pipeline's module is in its layer files; which model states a
  // Universal folder of a ZeRO-3 run copies, no real one shows.
  if (checkpoint.getPipelineDegree() > 1 ||
      (checkpoint.isUniversal() && form == FrozenForm::Zero3)) {
    checkpoint.incomplete =
        (model.getPath() + ": frozen parameters of a " +
         (checkpoint.isUniversal() ? "Universal folder made from ZeRO-3"
                                   : "pipeline-parallel run") +
         ", which are not read yet")
            .str();
    return Error::success();
  }
  for (const std::string &name : names)
    if (Error error = addFrozenParam(name, form))
      return error;
  return Error::success();
}

Expected<Extents> DeepSpeedReader::getFrozenShardShape(const TorchFile &file,
                                                       llvm::StringRef name,
                                                       FrozenForm form) const {
  PickleCursor root(file.getDocument());
  Expected<PickleCursor> value =
      form == FrozenForm::ModuleOnly
          ? root.at("module")
          : root.at("frozen_param_shapes");
  if (value)
    value = value->at(name);
  Expected<Extents> shape =
      !value                          ? value.takeError()
      : form == FrozenForm::ModuleOnly ? Expected<Extents>(value->get().shape)
                                      : value->getInts();
  if (shape && !getNumElements(*shape))
    return makeError(file.getPath() + ": frozen parameter '" + name +
                     "' has the shape " + formatList(*shape) +
                     ", beyond 2^63 elements");
  if (!shape)
    return makeError(file.getPath(), llvm::toString(shape.takeError()));
  return shape;
}

Expected<DeepSpeedCheckpoint::SavedShard>
DeepSpeedReader::getFrozenShard(const TorchFile &file, llvm::StringRef name,
                                FrozenForm form, const Extents &shape,
                                int64_t slots, std::optional<DType> &type) {
  PickleCursor root(file.getDocument());
  bool zero3 = form == FrozenForm::Zero3;
  std::string where = file.getPath().str() +
                      (zero3 ? ": frozen_param_fragments['" : ": module['") +
                      name.str() + "']";
  Expected<PickleCursor> value =
      root.at(zero3 ? "frozen_param_fragments" : "module");
  if (value)
    value = value->at(name);
  Expected<PickleRef> ref =
      value ? value->getTensor() : Expected<PickleRef>(value.takeError());
  if (!ref)
    return makeError(where + ": " + llvm::toString(ref.takeError()));
  TensorData saved = file.getTensor(*ref);
  // ZeRO-3's slots are flat; a whole shard is read row-major (a copy where
  // it is a view that is not).
  bool fits = zero3 ? saved.shape == Extents{slots} &&
                          saved.strides == Extents{1}
                    : saved.shape == shape;
  if (!fits)
    return makeError(
        where + " holds " + formatList(saved.shape) + ", not " +
        (zero3 ? "ZeRO-3's " + std::to_string(slots) + " slots of its " +
                     std::to_string(*getNumElements(shape)) + " elements"
               : "its shape " + formatList(shape)));
  if (type && saved.dtype != *type)
    return makeError(where + " is " + getSafetensorsName(saved.dtype) +
                     ", the first rank's " + getSafetensorsName(*type));
  type = saved.dtype;
  const char *data = zero3 ? saved.data
                           : makeRowMajor(saved, file, checkpoint.savedCopies,
                                          checkpoint.readIntoMemory)
                                 .data;
  return DeepSpeedCheckpoint::SavedShard{&file, data};
}

Error DeepSpeedReader::addFrozenParam(llvm::StringRef name, FrozenForm form) {
  const auto &files = checkpoint.modelFiles;
  int64_t tp = checkpoint.getTpDegree();
  bool zero3 = form == FrozenForm::Zero3;
  int64_t dp = zero3 ? int64_t(files.size()) / tp : 1;
  // Each TP rank's shard shape, as its first file records it; the TP map
  // those shards make.
  std::vector<Extents> shapes;
  for (int64_t t = 0; t < tp; ++t) {
    Expected<Extents> shape = getFrozenShardShape(*files[t], name, form);
    if (!shape)
      return shape.takeError();
    shapes.push_back(std::move(*shape));
  }
  Expected<ParamMap> tpMap = buildTpMap(name, shapes);
  if (!tpMap)
    return makeError(files.front()->getPath() + ": frozen parameter '" +
                     name + "': " + llvm::toString(tpMap.takeError()));
  // Each TP shard whole, or in ZeRO-3's slots over the DP ranks: grid
  // rank d * tp + t.
  Expected<ParamMap> map = nestZero3Slots(*tpMap, dp);
  if (!map)
    return map.takeError();
  std::vector<DeepSpeedCheckpoint::SavedShard> shards;
  std::optional<DType> type;
  for (int64_t r = 0; r < dp * tp; ++r) {
    const Extents &shape = shapes[r % tp];
    int64_t slots =
        layOutZeroGroup({*getNumElements(shape)}, dp, /*stage=*/3).partition;
    Expected<DeepSpeedCheckpoint::SavedShard> shard =
        getFrozenShard(*files[r], name, form, shape, slots, type);
    if (!shard)
      return shard.takeError();
    shards.push_back(*shard);
  }
  checkpoint.frozenTpMaps[name.str()] = std::move(*tpMap);
  CheckpointTensor tensor;
  tensor.name = name.str();
  tensor.role = CheckpointTensor::Role::Frozen;
  tensor.map = std::move(*map);
  tensor.states.push_back({TensorState::Weight, *type});
  checkpoint.tensors.push_back(std::move(tensor));
  checkpoint.savedShards.push_back(std::move(shards));
  return Error::success();
}

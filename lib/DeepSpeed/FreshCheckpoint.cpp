//===- FreshCheckpoint.cpp - A DeepSpeed checkpoint from weights alone ----===//
//
// A model's weights (any CheckpointSource) become the checkpoint a ZeRO-3
// job of one rank would hold before its optimizer's first step: one model
// state file whose module holds ZeRO-3's empty placeholders and whose
// param_shapes list the groups, and one optimizer file of ZeRO-3's form
// with an empty torch state and a placeholder fp32 partition per group.
// Every parameter's master is its weight, whole, on that one rank. The
// retargeter then writes it at any DP and TP degree and ZeRO stage as it
// writes any other checkpoint: the same writer, so that the files are
// those DeepSpeed's loader reads.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/Formats/Json/LegacyDocument.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringMap.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;

/// The DeepSpeed version the files say wrote them: the one whose files the
/// product's DeepSpeed reader and writer were checked against.
constexpr llvm::StringLiteral kDeepSpeedVersion = "0.19.6+edaa72212";

/// Checks that `groups` name every tensor of `weights` once, each a
/// floating-point weight; returns them as indices.
static Expected<std::vector<std::vector<size_t>>>
getGroups(const CheckpointSource &weights,
          const std::vector<FreshParamGroup> &groups) {
  llvm::ArrayRef<CheckpointTensor> tensors = weights.getTensors();
  llvm::StringMap<size_t> indices;
  for (auto [i, tensor] : llvm::enumerate(tensors)) {
    std::optional<DType> type = tensor.getType(TensorState::Weight);
    if (!type || !isFloatingPoint(*type) || getElementSize(*type) < 2 ||
        getElementSize(*type) > 4)
      return makeError(weights.getPath(),
                       "'" + tensor.name +
                           "' is not an fp32, bf16 or fp16 weight, which "
                           "an fp32 master is made from");
    indices[tensor.name] = i;
  }
  if (groups.empty()) {
    if (tensors.size() != 1)
      return makeError(
          weights.getPath() + ": " + std::to_string(tensors.size()) +
          " tensors, but nothing says in which order the model lists them "
          "(ZeRO flattens them in that order); give the parameter groups "
          "with --param-groups");
    return std::vector<std::vector<size_t>>{{0}};
  }
  std::vector<std::vector<size_t>> result;
  std::vector<bool> seen(tensors.size());
  for (const FreshParamGroup &group : groups) {
    std::vector<size_t> &indicesOf = result.emplace_back();
    for (const std::string &name : group.names) {
      auto found = indices.find(name);
      if (found == indices.end())
        return makeError("parameter group " +
                         std::to_string(result.size() - 1) + " names '" + name +
                         "', which " + weights.getPath() + " does not hold");
      if (seen[found->second])
        return makeError("'" + name + "' is in two parameter groups");
      seen[found->second] = true;
      indicesOf.push_back(found->second);
    }
  }
  for (auto [i, tensor] : llvm::enumerate(tensors))
    if (!seen[i])
      return makeError(weights.getPath() + ": '" + tensor.name +
                       "' is in no parameter group");
  return result;
}

/// torch Adam's hyper-parameters and their defaults, in the order a torch
/// 1.13 Adam saves them.
static const std::pair<const char *, llvm::json::Value> kAdamDefaults[] = {
    {"lr", 1e-3},        {"betas", llvm::json::Array{0.9, 0.999}},
    {"eps", 1e-8},       {"weight_decay", 0.0},
    {"amsgrad", false},  {"foreach", nullptr},
    {"maximize", false}, {"capturable", false}};

/// torch Adam's parameter group `g` as torch saves it: the group's own
/// hyper-parameters first (in name order: JSON keeps none), then the
/// optimizer's defaults, which are the config's optimizer.params where it
/// gives them (DeepSpeed's own flags there, as torch_adam, are not
/// torch's), then the params.
static PickleRef buildParamGroup(PickleBuilder &b,
                                 const FreshCheckpointOptions &options,
                                 size_t g) {
  const llvm::json::Object *config = nullptr;
  if (const llvm::json::Object *optimizer =
          options.config.getObject("optimizer"))
    config = optimizer->getObject("params");
  llvm::json::Object own;
  if (g < options.groups.size())
    own = options.groups[g].hyper;
  std::vector<std::string> keys;
  for (const auto &entry : own)
    keys.push_back(entry.first.str());
  llvm::sort(keys);
  // JSON does not say 0.0 from 0: torch's real-valued hyper-parameters
  // are floats.
  auto convert = [&](llvm::StringRef key, const llvm::json::Value &value) {
    bool real = llvm::is_contained({"lr", "eps", "weight_decay"}, key);
    if (real && value.getAsNumber())
      return b.number(*value.getAsNumber());
    if (key == "betas" && value.getAsArray()) {
      std::vector<PickleRef> betas;
      for (const llvm::json::Value &beta : *value.getAsArray())
        betas.push_back(beta.getAsNumber() ? b.number(*beta.getAsNumber())
                                           : b.json(beta));
      return b.list(betas);
    }
    return b.json(value);
  };
  std::vector<std::pair<PickleRef, PickleRef>> items;
  for (const std::string &key : keys)
    items.push_back({b.string(key), convert(key, *own.get(key))});
  for (const auto &[key, value] : kAdamDefaults) {
    if (own.get(key))
      continue;
    const llvm::json::Value *given = config ? config->get(key) : nullptr;
    items.push_back({b.string(key), convert(key, given ? *given : value)});
  }
  items.push_back({b.string("params"), b.list({b.integer(g)})});
  return b.dict(items);
}

/// The run's ds_config as `options` give it, with the weights' precision
/// enabled and ZeRO-3, the stage the templates are made at (the
/// retargeter writes the target's).
static llvm::json::Value getConfig(const FreshCheckpointOptions &options) {
  llvm::json::Object config = options.config;
  if (options.modelType == DType::BF16 && !config.get("bf16"))
    config["bf16"] = llvm::json::Object{{"enabled", true}};
  if (options.modelType == DType::F16 && !config.get("fp16"))
    config["fp16"] = llvm::json::Object{{"enabled", true}};
  if (!config.getObject("zero_optimization"))
    config["zero_optimization"] = llvm::json::Object();
  (*config.getObject("zero_optimization"))["stage"] = 3;
  return llvm::json::Value(std::move(config));
}

namespace {
/// A template document and its storages, all empty.
struct TemplateDocument {
  PickleBuilder b;
  std::vector<std::pair<std::string, std::string>> storages;

  PickleRef s(llvm::StringRef text) { return b.string(text); }
  /// An empty tensor of `type`: ZeRO-3's placeholder, or a partition to
  /// fill.
  PickleRef placeholder(DType type, bool requiresGrad) {
    std::string key = std::to_string(storages.size());
    storages.push_back({key, ""});
    return b.tensor(b.storage(key, type, 0), 0, {0}, {1}, requiresGrad);
  }
  /// The file of the document rooted at `root`, named `name`.
  Expected<std::unique_ptr<TorchFile>> parse(PickleRef root,
                                             const llvm::Twine &name) {
    Expected<std::unique_ptr<llvm::MemoryBuffer>> bytes =
        writeTemplateFile(b.finish(root), storages, nullptr);
    if (!bytes)
      return bytes.takeError();
    return TorchFile::parse(llvm::MemoryBuffer::getMemBufferCopy(
        (*bytes)->getBuffer(), name.str()));
  }
};
} // namespace

/// The model states: ZeRO-3's placeholders and the groups' shapes.
static Expected<std::unique_ptr<TorchFile>>
buildModelStates(const CheckpointSource &weights,
                 const FreshCheckpointOptions &options,
                 llvm::ArrayRef<std::vector<size_t>> groups) {
  TemplateDocument t;
  std::vector<std::pair<PickleRef, PickleRef>> module;
  std::vector<PickleRef> shapes;
  for (const std::vector<size_t> &group : groups) {
    std::vector<std::pair<PickleRef, PickleRef>> items;
    for (size_t index : group) {
      const CheckpointTensor &tensor = weights.getTensors()[index];
      module.push_back(
          {t.s(tensor.name), t.placeholder(options.modelType, false)});
      items.push_back({t.s(tensor.name), t.b.size(tensor.map.logicalShape)});
    }
    shapes.push_back(t.b.dict(items, /*ordered=*/true));
  }
  PickleBuilder &b = t.b;
  std::vector<std::pair<PickleRef, PickleRef>> root = {
      {t.s("module"), b.dict(module, /*ordered=*/true)},
      {t.s("buffer_names"), b.list({})},
      {t.s("optimizer"), b.none()},
      {t.s("param_shapes"), b.list(shapes)},
      {t.s("frozen_param_shapes"), b.dict({}, /*ordered=*/true)},
      {t.s("shared_params"), b.dict({})},
      {t.s("frozen_param_fragments"), b.dict({}, /*ordered=*/true)},
      {t.s("lr_scheduler"), b.none()},
      {t.s("data_sampler"), b.none()},
      {t.s("random_ltd"), b.none()},
      {t.s("sparse_tensor_module_names"), b.set({})},
      {t.s("skipped_steps"), b.integer(0)},
      {t.s("global_steps"), b.integer(0)},
      {t.s("global_samples"), b.integer(0)},
      {t.s("dp_world_size"), b.integer(1)},
      {t.s("mp_world_size"), b.integer(1)},
      {t.s("checkpoint_parallel_dimensions"),
       b.dict({{t.s("pp_degree"), b.integer(1)},
               {t.s("tp_degree"), b.integer(1)}})},
      {t.s("ds_config"), b.json(getConfig(options))},
      {t.s("ds_version"), t.s(kDeepSpeedVersion)}};
  if (options.universalInfo)
    root.push_back(
        {t.s("universal_checkpoint_info"), b.json(*options.universalInfo)});
  return t.parse(b.dict(root), weights.getPath() + " (as model states)");
}

/// The optimizer file, in ZeRO-3's form: no torch state before the first
/// step, a placeholder partition per group.
static Expected<std::unique_ptr<TorchFile>>
buildOptimizerStates(const CheckpointSource &weights,
                     const FreshCheckpointOptions &options, size_t groups) {
  TemplateDocument t;
  PickleBuilder &b = t.b;
  std::vector<PickleRef> paramGroups, partitions;
  for (size_t g = 0; g < groups; ++g) {
    paramGroups.push_back(buildParamGroup(b, options, g));
    partitions.push_back(t.placeholder(DType::F32, true));
  }
  PickleRef states =
      b.dict({{t.s("zero_stage"), b.enumMember("deepspeed.runtime.zero.config",
                                               "ZeroStageEnum", "weights")},
              {t.s("loss_scaler"),
               b.object("deepspeed.runtime.fp16.loss_scaler", "LossScaler",
                        b.dict({{t.s("cur_scale"), b.number(1.0)},
                                {t.s("dynamic"), b.boolean(false)}}))},
              {t.s("dynamic_loss_scale"), b.boolean(false)},
              {t.s("overflow"), b.boolean(false)},
              {t.s("partition_count"), b.integer(1)},
              {t.s("optimizer_state_dict"),
               b.dict({{t.s("state"), b.dict({})},
                       {t.s("param_groups"), b.list(paramGroups)}})},
              {t.s("fp32_flat_groups"), b.list(partitions)}});
  PickleRef root = b.dict({{t.s("optimizer_state_dict"), states},
                           {t.s("ds_config"), b.json(getConfig(options))},
                           {t.s("ds_version"), t.s(kDeepSpeedVersion)}});
  return t.parse(root, weights.getPath() + " (as optimizer states)");
}

Error DeepSpeedReader::buildFreshTemplates(
    const FreshCheckpointOptions &options,
    llvm::ArrayRef<std::vector<size_t>> groups) {
  const CheckpointSource &weights = *checkpoint.freshSource;
  Expected<std::unique_ptr<TorchFile>> model =
      buildModelStates(weights, options, groups);
  if (!model)
    return model.takeError();
  Expected<std::unique_ptr<TorchFile>> optimizer =
      buildOptimizerStates(weights, options, groups.size());
  if (!optimizer)
    return optimizer.takeError();
  checkpoint.modelFiles.push_back(std::move(*model));
  DeepSpeedCheckpoint::RankFile &rank = checkpoint.ranks.emplace_back();
  rank.file = std::move(*optimizer);
  rank.partitions.resize(groups.size());
  rank.steps.resize(groups.size());
  return Error::success();
}

Error DeepSpeedReader::runFresh(const CheckpointSource &weights,
                                const FreshCheckpointOptions &options) {
  if (options.modelType != DType::BF16 && options.modelType != DType::F16 &&
      options.modelType != DType::F32)
    return makeError("the model's weights must be bf16, fp16 or fp32, not " +
                     getSafetensorsName(options.modelType));
  Expected<std::vector<std::vector<size_t>>> groups =
      getGroups(weights, options.groups);
  if (!groups)
    return groups.takeError();
  checkpoint.folder = weights.getPath().str();
  checkpoint.universal = true;
  checkpoint.freshSource = &weights;
  checkpoint.tp = checkpoint.dp = 1;
  checkpoint.dsVersion = kDeepSpeedVersion.str();
  checkpoint.stage = 3;
  checkpoint.optimizerPrefix = options.modelType == DType::BF16 ? "bf16_" : "";
  if (options.universalInfo) {
    Expected<LegacyCategories> categories =
        parseLegacyCategories(*options.universalInfo);
    if (!categories)
      return makeError("universal_checkpoint_info: " +
                       llvm::toString(categories.takeError()));
    checkpoint.categories = std::move(*categories);
  }
  for (auto [g, group] : llvm::enumerate(*groups)) {
    checkpoint.groupMoments.push_back(false);
    for (size_t index : group) {
      const CheckpointTensor &tensor = weights.getTensors()[index];
      DeepSpeedParam param;
      param.name = tensor.name;
      param.group = g;
      param.tpShapes = {tensor.map.logicalShape};
      Expected<ParamMap> whole =
          buildReplicatedLayout(param.name, tensor.map.logicalShape, 1);
      if (!whole)
        return whole.takeError();
      param.tpMap = *whole;
      param.map = std::move(*whole);
      param.slices = {{0, *getNumElements(tensor.map.logicalShape)}};
      std::array<TensorData, 3> &states =
          checkpoint.universalStates.emplace_back();
      states[static_cast<size_t>(TensorState::Master)] = {
          *tensor.getType(TensorState::Weight), tensor.map.logicalShape,
          getRowMajorStrides(tensor.map.logicalShape),
          weights.getShard(index, TensorState::Weight, 0)};
      checkpoint.freshIndex.push_back(index);
      checkpoint.params.push_back(std::move(param));
    }
  }
  if (Error error = buildFreshTemplates(options, *groups))
    return error;
  return buildTensors();
}

Expected<std::unique_ptr<DeepSpeedCheckpoint>>
DeepSpeedCheckpoint::openFresh(const CheckpointSource &weights,
                               const FreshCheckpointOptions &options) {
  auto checkpoint =
      std::unique_ptr<DeepSpeedCheckpoint>(new DeepSpeedCheckpoint());
  DeepSpeedReader reader(*checkpoint);
  if (Error error = reader.runFresh(weights, options))
    return std::move(error);
  return checkpoint;
}

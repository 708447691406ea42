//===- UniversalDocuments.cpp - What a Universal checkpoint's files hold --===//

#include "ucp/DeepSpeed/UniversalDocuments.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

using namespace ucp;
using llvm::Expected;

/// The class DeepSpeed's universal files name for sub-parameter shapes.
static constexpr llvm::StringLiteral kSubparamModule =
    "deepspeed.checkpoint.universal_checkpoint";
static constexpr llvm::StringLiteral kSubparamClass = "SubparamShape";

/// A SubparamShape(patterns, shape, partition_dim) copied from `entry`.
static Expected<PickleRef> buildSubparamShape(PickleBuilder &builder,
                                              const PickleCursor &entry) {
  llvm::DenseMap<PickleRef, PickleRef> copied;
  std::vector<std::pair<PickleRef, PickleRef>> fields;
  for (llvm::StringRef key : {"patterns", "shape", "partition_dim"}) {
    Expected<PickleCursor> field = entry.at(key);
    if (!field)
      return field.takeError();
    fields.push_back(
        {builder.string(key),
         builder.copy(entry.getDocument(), field->getRef(), copied)});
  }
  // Version 0.4 records the sub-parameters' widths at partition_dim; the
  // older scalar count would need the converter's normalisation.
  Expected<PickleCursor> dim = entry.at("partition_dim");
  if (!dim)
    return dim.takeError();
  Expected<int64_t> index = dim->getInt();
  if (!index)
    return index.takeError();
  Expected<PickleCursor> shape = entry.at("shape");
  if (!shape)
    return shape.takeError();
  Expected<PickleCursor> widths = shape->at(static_cast<size_t>(*index));
  if (!widths)
    return widths.takeError();
  if (!widths->is(PickleValue::Tuple) && !widths->is(PickleValue::List))
    return widths->fail("a sub-parameter count rather than their sizes "
                        "(universal checkpoint version before 0.4), which "
                        "is not converted");
  return builder.object(kSubparamModule, kSubparamClass, builder.dict(fields));
}

Expected<PickleDocument>
ucp::buildStateDocument(const UniversalStateLayout &layout, bool requiresGrad) {
  PickleBuilder builder;
  std::optional<int64_t> elements = getNumElements(layout.shape);
  if (!elements)
    return makeError("a tensor of " + formatList(layout.shape) +
                     " holds more elements than int64 "
                     "counts");
  PickleRef tensor = builder.tensor(
      builder.storage(kStateStorageKey, DType::F32, *elements), 0, layout.shape,
      getRowMajorStrides(layout.shape), requiresGrad);
  if (layout.bare)
    return builder.finish(tensor);
  if (layout.experts)
    return builder.finish(builder.dict(
        {{builder.string("param"), tensor},
         {builder.string("cat_dim"), builder.integer(0)},
         {builder.string("is_expert_param"), builder.boolean(true)},
         {builder.string("ep_num_experts"),
          builder.integer(*layout.experts)}}));
  const UniversalMerge &merge = layout.merge;
  std::vector<std::pair<PickleRef, PickleRef>> items;
  if (merge.catDim)
    items.push_back(
        {builder.string("cat_dim"), builder.integer(*merge.catDim)});
  if (merge.subParamCount)
    items.push_back({builder.string("param_n_sub_params"),
                     builder.integer(*merge.subParamCount)});
  if (merge.subParams) {
    if (!layout.subParamEntry)
      return makeError("no parameter_with_sub_params entry");
    Expected<PickleRef> shape =
        buildSubparamShape(builder, *layout.subParamEntry);
    if (!shape)
      return shape.takeError();
    items.push_back({builder.string("sub_param_shape"), *shape});
  }
  if (merge.vocabulary)
    items.push_back({builder.string("vocab_tensor"), builder.boolean(true)});
  items.push_back({builder.string("param"), tensor});
  return builder.finish(builder.dict(items));
}

PickleDocument ucp::buildCopyDocument(const PickleDocument &from,
                                      PickleRef value) {
  PickleBuilder builder;
  llvm::DenseMap<PickleRef, PickleRef> copied;
  return builder.finish(builder.copy(from, value, copied));
}

Expected<PickleDocument>
ucp::buildTensorStateDocument(const DeepSpeedCheckpoint &checkpoint) {
  const TorchFile &file = checkpoint.getOptimizerFile(0);
  const PickleDocument &from = file.getDocument();
  auto inFile = [&](llvm::Error error) {
    return makeError(file.getPath() + ": " + llvm::toString(std::move(error)));
  };
  Expected<PickleCursor> states = PickleCursor(from).at("optimizer_state_dict");
  if (!states)
    return inFile(states.takeError());
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      states->getStringItems();
  if (!items)
    return inFile(items.takeError());
  bool zero3 = checkpoint.getZeroStage() == 3;
  // ZeRO-1/2 drops what the per-parameter files hold; ZeRO-3 keeps it all.
  // Both add the torch optimizer's param_groups.
  llvm::StringRef inner =
      zero3 ? "optimizer_state_dict" : "base_optimizer_state";
  Expected<PickleCursor> groups = states->at(inner);
  if (groups)
    groups = groups->at("param_groups");
  if (!groups)
    return inFile(groups.takeError());
  PickleBuilder builder;
  llvm::DenseMap<PickleRef, PickleRef> copied;
  std::vector<std::pair<PickleRef, PickleRef>> output;
  for (const auto &[key, value] : *items) {
    if (!zero3 &&
        (key == "base_optimizer_state" || key == "param_slice_mappings" ||
         key == "single_partition_of_fp32_groups"))
      continue;
    // Assigning param_groups replaces a value in place, or appends one.
    PickleRef source =
        key == "param_groups" ? groups->getRef() : value.getRef();
    PickleRef copy = builder.copy(from, source, copied);
    // ZeRO-1/2 reads the state as DeepSpeed's reshaping reader does: its
    // partitions stripped of padding, so no group padding is left, and one
    // partition count per group, the checkpoint's DP degree.
    if (!zero3 && (key == "group_paddings" || key == "partition_count") &&
        value.is(PickleValue::List) && !value.get().items.empty())
      copy = builder.list(std::vector<PickleRef>(
          value.get().items.size(),
          builder.integer(key == "group_paddings" ? 0
                                                  : checkpoint.getDpDegree())));
    output.push_back({builder.string(key), copy});
  }
  if (!from.lookup(states->getRef(), "param_groups"))
    output.push_back({builder.string("param_groups"),
                      builder.copy(from, groups->getRef(), copied)});
  // ZeRO-3 saves the dict itself (an OrderedDict stays one); ZeRO-1/2 a
  // new plain dict.
  bool ordered = zero3 && states->get().module == "collections";
  return builder.finish(builder.dict(output, ordered));
}

/// The layer keys of a ds_autoep_layers entry, in the order the Universal
/// model states keep them.
static constexpr llvm::StringLiteral kAutoEpLayerKeys[] = {
    "moe_layer_id", "module_path",       "expert_key_prefix",
    "num_experts",  "num_local_experts", "ep_size"};

Expected<PickleDocument>
ucp::buildAutoEpModelStatesDocument(const TorchFile &model) {
  const PickleDocument &from = model.getDocument();
  auto inFile = [&](llvm::Error error) {
    return makeError(model.getPath() + ": " + llvm::toString(std::move(error)));
  };
  PickleCursor root(from);
  Expected<PickleCursor> info = root.at("universal_checkpoint_info");
  if (!info)
    return inFile(info.takeError());
  PickleBuilder builder;
  llvm::DenseMap<PickleRef, PickleRef> replaced;
  if (std::optional<PickleCursor> patterns =
          info->find("expert_parameter_patterns")) {
    Expected<std::vector<PickleCursor>> items = patterns->getItems();
    if (!items)
      return inFile(items.takeError());
    std::vector<PickleRef> cut;
    for (const PickleCursor &item : *items) {
      Expected<std::string> text = item.getString();
      if (!text)
        return inFile(text.takeError());
      llvm::StringRef pattern(*text);
      pattern.consume_front(".*"); // The same under re.search.
      cut.push_back(builder.string(pattern));
    }
    replaced[patterns->getRef()] = builder.list(cut);
  }
  if (std::optional<PickleCursor> layers = info->find("ds_autoep_layers")) {
    Expected<std::vector<PickleCursor>> entries = layers->getItems();
    if (!entries)
      return inFile(entries.takeError());
    std::vector<PickleRef> cut;
    for (const PickleCursor &entry : *entries) {
      std::vector<std::pair<PickleRef, PickleRef>> fields;
      for (llvm::StringRef key : kAutoEpLayerKeys) {
        Expected<PickleCursor> value = entry.at(key);
        if (!value)
          return inFile(value.takeError());
        fields.push_back({builder.string(key),
                          builder.copy(from, value->getRef(), replaced)});
      }
      cut.push_back(builder.dict(fields));
    }
    replaced[layers->getRef()] = builder.list(cut);
  }
  return builder.finish(builder.copy(from, root.getRef(), replaced));
}

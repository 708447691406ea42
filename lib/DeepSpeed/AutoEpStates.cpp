//===- AutoEpStates.cpp - AutoEP metadata of a model-state file -----------===//
//
// AutoEP records its layers in `ds_autoep_layers` (older checkpoints:
// `autoep_layers`), one dict per layer: the layer (moe_layer_id,
// module_path, expert_key_prefix, num_experts, num_local_experts, ep_size)
// and, in the current form, the writing rank's place (checkpoint_format,
// ep_rank, expert_data_parallel_rank and _world_size). The layer fields
// are required; the rank fields are read where present and checked by
// the reader (AutoEpLayout.cpp).
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;

/// Reads the int under `key` of `entry` into `value`.
static Error readInt(const PickleCursor &entry, llvm::StringRef key,
                     int64_t &value) {
  Expected<PickleCursor> field = entry.at(key);
  if (!field)
    return field.takeError();
  Expected<int64_t> number = field->getInt();
  if (!number)
    return number.takeError();
  value = *number;
  return Error::success();
}

/// Reads the int under `key`, if `entry` has it and it is not None.
static Error readOptionalInt(const PickleCursor &entry, llvm::StringRef key,
                             std::optional<int64_t> &value) {
  std::optional<PickleCursor> field = entry.find(key);
  if (!field || field->is(PickleValue::None))
    return Error::success();
  Expected<int64_t> number = field->getInt();
  if (!number)
    return number.takeError();
  value = *number;
  return Error::success();
}

static Error readString(const PickleCursor &entry, llvm::StringRef key,
                        std::string &value) {
  Expected<PickleCursor> field = entry.at(key);
  if (!field)
    return field.takeError();
  Expected<std::string> text = field->getString();
  if (!text)
    return text.takeError();
  value = *text;
  return Error::success();
}

static Expected<AutoEpRecord> readRecord(const PickleCursor &entry) {
  AutoEpRecord record;
  AutoEpLayer &layer = record.layer;
  for (auto [key, value] : {std::pair{"moe_layer_id", &layer.moeLayerId},
                            {"num_experts", &layer.numExperts},
                            {"num_local_experts", &layer.localExperts},
                            {"ep_size", &layer.epSize}})
    if (Error error = readInt(entry, key, *value))
      return std::move(error);
  for (auto [key, value] : {std::pair{"module_path", &layer.modulePath},
                            {"expert_key_prefix", &layer.expertKeyPrefix}})
    if (Error error = readString(entry, key, *value))
      return std::move(error);
  if (std::optional<PickleCursor> format = entry.find("checkpoint_format")) {
    Expected<std::string> text = format->getString();
    if (!text)
      return text.takeError();
    record.format = *text;
  }
  for (auto [key, value] :
       {std::pair{"ep_rank", &record.epRank},
        {"expert_data_parallel_rank", &record.edpRank},
        {"expert_data_parallel_world_size", &record.edpWorldSize}})
    if (Error error = readOptionalInt(entry, key, *value))
      return std::move(error);
  if (layer.numExperts <= 0 || layer.epSize <= 0 || layer.localExperts <= 0 ||
      layer.localExperts * layer.epSize != layer.numExperts)
    return entry.fail("num_experts " + std::to_string(layer.numExperts) +
                      " is not num_local_experts " +
                      std::to_string(layer.localExperts) + " x ep_size " +
                      std::to_string(layer.epSize));
  if (layer.expertKeyPrefix.empty())
    return entry.fail("an empty expert_key_prefix");
  return record;
}

Expected<std::optional<AutoEpStates>>
ucp::readAutoEpStates(const PickleCursor &root) {
  AutoEpStates states;
  std::optional<PickleCursor> layers = root.find("ds_autoep_layers");
  if (!layers || layers->is(PickleValue::None)) {
    layers = root.find("autoep_layers");
    states.legacyKey = true;
  }
  if (!layers || layers->is(PickleValue::None))
    return std::nullopt;
  Expected<std::vector<PickleCursor>> entries = layers->getItems();
  if (!entries)
    return entries.takeError();
  if (entries->empty())
    return layers->fail("lists no AutoEP layer");
  for (const PickleCursor &entry : *entries) {
    Expected<AutoEpRecord> record = readRecord(entry);
    if (!record)
      return record.takeError();
    states.layers.push_back(std::move(*record));
  }
  if (std::optional<PickleCursor> counts = root.find("num_experts");
      counts && !counts->is(PickleValue::None)) {
    Expected<Extents> values = counts->getInts();
    if (!values)
      return values.takeError();
    states.numExperts = std::move(*values);
  }
  return states;
}

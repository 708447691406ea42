//===- DeepSpeedStates.cpp - Model and optimizer states as records --------===//
//
// The keys of DeepSpeed's model-state and optimizer-state files that the
// conversion needs, read through PickleCursor so that a file of another
// shape is refused at the key that differs. Unneeded keys are not read.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cstring>

using namespace ucp;
using llvm::Error;
using llvm::Expected;

/// Prefixes `error` with the file's path.
static Error inFile(const TorchFile &file, Error error) {
  return makeError(file.getPath() + ": " + llvm::toString(std::move(error)));
}

/// Reads `key` of `object` with `read` (a PickleCursor getter).
template <typename T, typename Read>
static Expected<T> readAt(const PickleCursor &object, llvm::StringRef key,
                          Read read) {
  Expected<PickleCursor> value = object.at(key);
  if (!value)
    return value.takeError();
  return read(*value);
}

static Expected<std::vector<GroupParam>> readGroup(const PickleCursor &group) {
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      group.getStringItems();
  if (!items)
    return items.takeError();
  std::vector<GroupParam> params;
  for (auto &[name, shape] : *items) {
    Expected<Extents> extents = shape.getInts();
    if (!extents)
      return extents.takeError();
    std::optional<int64_t> elements = getNumElements(*extents);
    if (!elements)
      return shape.fail("a shape of more elements than int64 holds, or a "
                        "negative extent");
    params.push_back({name, std::move(*extents), *elements});
  }
  return params;
}

Expected<ModelStates> ucp::readModelStates(const TorchFile &file) {
  PickleCursor root(file.getDocument());
  ModelStates states;
  auto run = [&]() -> Error {
    Expected<PickleCursor> shapes = root.at("param_shapes");
    if (!shapes)
      return shapes.takeError();
    // A pipeline run with BF16_Optimizer saves None (PipelineLayers.cpp
    // derives the groups from the optimizer and layer files).
    states.shapesRecorded = !shapes->is(PickleValue::None);
    Expected<std::vector<PickleCursor>> groups =
        states.shapesRecorded ? shapes->getItems()
                              : std::vector<PickleCursor>();
    if (!groups)
      return groups.takeError();
    for (const PickleCursor &group : *groups) {
      Expected<std::vector<GroupParam>> params = readGroup(group);
      if (!params)
        return params.takeError();
      states.groups.push_back(std::move(*params));
    }
    auto getInt = [](const PickleCursor &c) { return c.getInt(); };
    auto getString = [](const PickleCursor &c) { return c.getString(); };
    Expected<int64_t> dp = readAt<int64_t>(root, "dp_world_size", getInt);
    Expected<int64_t> mp = readAt<int64_t>(root, "mp_world_size", getInt);
    Expected<int64_t> steps = readAt<int64_t>(root, "global_steps", getInt);
    Expected<std::string> version =
        readAt<std::string>(root, "ds_version", getString);
    if (!dp || !mp || !steps || !version)
      return llvm::joinErrors(
          llvm::joinErrors(dp.takeError(), mp.takeError()),
          llvm::joinErrors(steps.takeError(), version.takeError()));
    states.dpWorldSize = *dp;
    states.mpWorldSize = *mp;
    states.globalSteps = *steps;
    states.version = *version;
    if (std::optional<PickleCursor> info =
            root.find("universal_checkpoint_info");
        info && !info->is(PickleValue::None)) {
      Expected<llvm::json::Value> json = info->toJson();
      if (!json)
        return json.takeError();
      states.universalInfo = std::move(*json);
    }
    // checkpoint_parallel_dimensions: {'pp_degree': P, 'tp_degree': T}.
    if (std::optional<PickleCursor> dims =
            root.find("checkpoint_parallel_dimensions");
        dims && !dims->is(PickleValue::None)) {
      Expected<int64_t> pp = readAt<int64_t>(*dims, "pp_degree", getInt);
      Expected<int64_t> tp = readAt<int64_t>(*dims, "tp_degree", getInt);
      if (!pp || !tp)
        return llvm::joinErrors(pp.takeError(), tp.takeError());
      states.ppTpDegrees = {*pp, *tp};
    }
    Expected<std::optional<AutoEpStates>> autoEp = readAutoEpStates(root);
    if (!autoEp)
      return autoEp.takeError();
    states.autoEp = std::move(*autoEp);
    return Error::success();
  };
  if (Error error = run())
    return inFile(file, std::move(error));
  return states;
}

/// Reads a flat partition: a 1-D contiguous fp32 tensor.
static Error readPartition(const TorchFile &file, const PickleCursor &value,
                           PickleRef &ref, int64_t &length) {
  Expected<PickleRef> tensor = value.getTensor();
  if (!tensor)
    return tensor.takeError();
  TensorData data = file.getTensor(*tensor);
  if (data.dtype != DType::F32 || data.shape.size() != 1 ||
      (data.shape[0] > 1 && data.strides[0] != 1))
    return value.fail("expected a flat F32 partition, got a " +
                      getSafetensorsName(data.dtype) + " tensor " +
                      formatList(data.shape) + " of strides " +
                      formatList(data.strides));
  ref = *tensor;
  length = data.shape[0];
  return Error::success();
}

/// Reads the stage a ZeroStageEnum member names.
static Expected<int> readStage(const PickleCursor &value) {
  const PickleValue &member = value.get();
  if (member.kind != PickleValue::EnumMember || member.name != "ZeroStageEnum")
    return value.expected("a ZeroStageEnum member");
  if (member.text == "optimizer_states")
    return 1;
  if (member.text == "gradients")
    return 2;
  if (member.text == "weights")
    return 3;
  return value.fail("ZeroStageEnum." + member.text + " is not a ZeRO stage");
}

/// Reads the Adam moments and step of each group from `state`, an
/// optimizer state_dict's "state" (group index -> tensors). torch's Adam
/// makes a group's state at its first step: a group without one holds
/// no moments.
static Error readMoments(const TorchFile &file, const PickleCursor &state,
                         std::vector<RankGroup> &groups) {
  Expected<std::vector<std::pair<int64_t, PickleCursor>>> items =
      state.getIntItems();
  if (!items)
    return items.takeError();
  for (auto &[index, moments] : *items) {
    if (index < 0 || index >= static_cast<int64_t>(groups.size()))
      return moments.fail("is the state of no group");
    RankGroup &group = groups[index];
    if (group.moments)
      return moments.fail("is the second state of group " +
                          std::to_string(index));
    std::optional<PickleCursor> average = moments.find("exp_avg");
    std::optional<PickleCursor> squares = moments.find("exp_avg_sq");
    if (average.has_value() != squares.has_value())
      return moments.fail(std::string("holds ") +
                          (average ? "exp_avg" : "exp_avg_sq") + " without " +
                          (average ? "exp_avg_sq" : "exp_avg"));
    group.moments = average.has_value();
    for (auto [slot, value] : {std::pair{1, average}, {2, squares}})
      if (value)
        if (Error error = readPartition(file, *value, group.partitions[slot],
                                        group.lengths[slot]))
          return error;
    if (std::optional<PickleCursor> step = moments.find("step")) {
      Expected<PickleRef> tensor = step->getTensor();
      if (!tensor)
        return tensor.takeError();
      group.step = *tensor;
    }
  }
  return Error::success();
}

/// Reads ZeRO-1/2's param_slice_mappings into the groups.
static Error readSlices(const PickleCursor &mappings,
                        std::vector<RankGroup> &groups) {
  Expected<std::vector<PickleCursor>> lists = mappings.getItems();
  if (!lists)
    return lists.takeError();
  if (lists->size() != groups.size())
    return mappings.fail("lists " + std::to_string(lists->size()) +
                         " groups, not " + std::to_string(groups.size()));
  for (auto [group, list] : llvm::zip(groups, *lists)) {
    Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
        list.getStringItems();
    if (!items)
      return items.takeError();
    for (auto &[name, address] : *items) {
      Expected<PickleCursor> numel = address.getField("numel");
      Expected<PickleCursor> start = address.getField("start");
      if (!numel || !start)
        return llvm::joinErrors(numel.takeError(), start.takeError());
      Expected<int64_t> count = numel->getInt();
      Expected<int64_t> offset = start->getInt();
      if (!count || !offset)
        return llvm::joinErrors(count.takeError(), offset.takeError());
      group.slices.push_back({name, {*count, *offset}});
    }
  }
  return Error::success();
}

/// Reads the fp32 partitions (`fp32` lists one per group) and the groups'
/// moments from `state`.
static Error readGroups(const TorchFile &file, const PickleCursor &fp32,
                        const PickleCursor &state,
                        std::vector<RankGroup> &groups) {
  Expected<std::vector<PickleCursor>> partitions = fp32.getItems();
  if (!partitions)
    return partitions.takeError();
  groups.resize(partitions->size());
  for (auto [group, partition] : llvm::zip(groups, *partitions))
    if (Error error = readPartition(file, partition, group.partitions[0],
                                    group.lengths[0]))
      return error;
  return readMoments(file, state, groups);
}

/// Reads `partition_count`: an int (ZeRO-3) or one int per group.
static Error readPartitionCount(const PickleCursor &value,
                                TensorStates &states) {
  if (value.is(PickleValue::Int)) {
    Expected<int64_t> count = value.getInt();
    if (!count)
      return count.takeError();
    states.partitionCount = *count;
    return Error::success();
  }
  Expected<Extents> counts = value.getInts();
  if (!counts)
    return counts.takeError();
  if (counts->empty())
    return value.fail("lists no partition count");
  states.partitionCount = counts->front();
  states.groupPartitionCounts = std::move(*counts);
  return Error::success();
}

/// Reads ZeRO-3's `ds_zero_partition_groups` (written with AutoEP): per
/// sub-group, its partition count, this rank's place and the group's ranks.
static Error readPartitionGroups(const PickleCursor &value,
                                 TensorStates &states) {
  Expected<std::vector<PickleCursor>> entries = value.getItems();
  if (!entries)
    return entries.takeError();
  for (auto [index, entry] : llvm::enumerate(*entries)) {
    Expected<PickleCursor> subGroup = entry.at("sub_group");
    Expected<PickleCursor> count = entry.at("partition_count");
    Expected<PickleCursor> rank = entry.at("partition_rank");
    Expected<PickleCursor> ranks = entry.at("partition_ranks");
    if (!subGroup || !count || !rank || !ranks)
      return llvm::joinErrors(
          llvm::joinErrors(subGroup.takeError(), count.takeError()),
          llvm::joinErrors(rank.takeError(), ranks.takeError()));
    Expected<int64_t> group = subGroup->getInt();
    Expected<int64_t> groupCount = count->getInt();
    Expected<int64_t> place = rank->getInt();
    Expected<Extents> members = ranks->getInts();
    if (!group || !groupCount || !place || !members)
      return llvm::joinErrors(
          llvm::joinErrors(group.takeError(), groupCount.takeError()),
          llvm::joinErrors(place.takeError(), members.takeError()));
    if (*group != static_cast<int64_t>(index))
      return subGroup->fail("sub-group " + std::to_string(*group) +
                            " listed in place " + std::to_string(index));
    if (static_cast<int64_t>(members->size()) != *groupCount || *place < 0 ||
        *place >= *groupCount)
      return entry.fail("partition_rank " + std::to_string(*place) +
                        " of partition_count " + std::to_string(*groupCount) +
                        " over the ranks " + formatList(*members));
    states.groupPartitionCounts.push_back(*groupCount);
    states.groupPartitionRank.push_back(*place);
    states.groupPartitionRanks.push_back(std::move(*members));
  }
  return Error::success();
}

/// `number` in the fewest digits that read back as it.
static std::string formatExactly(double number) {
  for (int digits : {6, 15, 17}) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%.*g", digits, number);
    if (digits == 17 || std::strtod(text.c_str(), nullptr) == number)
      return text;
  }
  return "";
}

/// `value` as text, for comparing one run's files: nested containers and
/// scalars.
static std::string describeValue(const PickleCursor &value) {
  const PickleValue &v = value.get();
  switch (v.kind) {
  case PickleValue::None:
    return "None";
  case PickleValue::Bool:
    return v.boolean ? "True" : "False";
  case PickleValue::Int:
    return std::to_string(v.integer);
  case PickleValue::Float:
    return formatExactly(v.number);
  case PickleValue::String:
    return "'" + v.text + "'";
  case PickleValue::List:
  case PickleValue::Tuple: {
    Expected<std::vector<PickleCursor>> items = value.getItems();
    if (!items)
      return llvm::toString(items.takeError());
    std::vector<std::string> texts;
    for (const PickleCursor &item : *items)
      texts.push_back(describeValue(item));
    return "[" + llvm::join(texts, ", ") + "]";
  }
  default:
    return value.getDocument().describe(value.getRef()).str();
  }
}

/// The torch optimizer's `param_groups`: per group, each setting but
/// `params` (each stage numbers its own) as text.
static Expected<std::vector<std::vector<std::pair<std::string, std::string>>>>
readParamGroups(const PickleCursor &list) {
  Expected<std::vector<PickleCursor>> groups = list.getItems();
  if (!groups)
    return groups.takeError();
  std::vector<std::vector<std::pair<std::string, std::string>>> settings;
  for (const PickleCursor &group : *groups) {
    Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
        group.getStringItems();
    if (!items)
      return items.takeError();
    std::vector<std::pair<std::string, std::string>> &mine =
        settings.emplace_back();
    for (const auto &[key, item] : *items)
      if (key != "params")
        mine.push_back({key, describeValue(item)});
  }
  return settings;
}

Expected<TensorStates> ucp::readTensorStates(const TorchFile &file,
                                             bool zero3, llvm::StringRef key) {
  PickleCursor root(file.getDocument());
  TensorStates states;
  auto run = [&]() -> Error {
    Expected<PickleCursor> dict = root.at(key);
    if (!dict)
      return dict.takeError();
    if (std::optional<PickleCursor> stage = dict->find("zero_stage")) {
      Expected<int> value = readStage(*stage);
      if (!value)
        return value.takeError();
      states.stage = *value;
      states.recordsStage = true;
    }
    if ((states.stage == 3) != zero3)
      return dict->fail(zero3 ? "is not a ZeRO-3 optimizer state, though the "
                                "model-state files are ZeRO-3's"
                              : "is a ZeRO-3 optimizer state, though the "
                                "model-state files are ZeRO-1/2's");
    Expected<PickleCursor> count = dict->at("partition_count");
    if (!count)
      return count.takeError();
    if (Error error = readPartitionCount(*count, states))
      return error;
    if (std::optional<PickleCursor> groups =
            dict->find("ds_zero_partition_groups"))
      if (Error error = readPartitionGroups(*groups, states))
        return error;
    Expected<PickleCursor> fp32 = dict->at(
        zero3 ? "fp32_flat_groups" : "single_partition_of_fp32_groups");
    Expected<PickleCursor> inner =
        dict->at(zero3 ? "optimizer_state_dict" : "base_optimizer_state");
    if (!fp32 || !inner)
      return llvm::joinErrors(fp32.takeError(), inner.takeError());
    Expected<PickleCursor> state = inner->at("state");
    if (!state)
      return state.takeError();
    if (std::optional<PickleCursor> groups = inner->find("param_groups")) {
      auto settings = readParamGroups(*groups);
      if (!settings)
        return settings.takeError();
      states.paramGroups = std::move(*settings);
    }
    if (Error error = readGroups(file, *fp32, *state, states.groups))
      return error;
    if (states.groupPartitionCounts.empty())
      states.groupPartitionCounts.assign(states.groups.size(),
                                         states.partitionCount);
    if (states.groupPartitionCounts.size() != states.groups.size())
      return count->fail("gives " +
                         std::to_string(states.groupPartitionCounts.size()) +
                         " partition counts for " +
                         std::to_string(states.groups.size()) + " groups");
    if (!zero3) {
      Expected<PickleCursor> mappings = dict->at("param_slice_mappings");
      if (!mappings)
        return mappings.takeError();
      if (Error error = readSlices(*mappings, states.groups))
        return error;
    }
    Expected<PickleCursor> version = root.at("ds_version");
    if (!version)
      return version.takeError();
    Expected<std::string> text = version->getString();
    if (!text)
      return text.takeError();
    states.version = *text;
    return Error::success();
  };
  if (Error error = run())
    return inFile(file, std::move(error));
  return states;
}

Expected<double> ucp::readStepValue(const TorchFile &file, PickleRef ref) {
  const PickleValue &value = file.getDocument().get(ref);
  if (value.kind == PickleValue::Int)
    return static_cast<double>(value.integer);
  if (value.kind == PickleValue::Float)
    return value.number;
  if (value.kind == PickleValue::Tensor && getNumElements(value.shape) == 1) {
    TensorData tensor = file.getTensor(ref);
    return readElement(tensor.dtype, tensor.data);
  }
  return makeError(file.getPath() + ": a step that is " +
                   file.getDocument().describe(ref) + ", not a number");
}

TensorData ucp::makeRowMajor(const TensorData &tensor, const TorchFile &file,
                             std::deque<std::string> &copies,
                             std::vector<FileBytes> &reads) {
  if (tensor.strides == getRowMajorStrides(tensor.shape) ||
      getNumElements(tensor.shape).value_or(0) <= 1)
    return tensor;
  int64_t size = getElementSize(tensor.dtype);
  // The span of the view (strides are never negative in a saved tensor).
  int64_t last = 0;
  for (auto [extent, stride] : llvm::zip(tensor.shape, tensor.strides))
    last += (extent - 1) * stride;
  const llvm::MemoryBuffer &buffer = file.getBuffer();
  reads.push_back({buffer.getBufferIdentifier().str(),
                   tensor.data - buffer.getBufferStart(), (last + 1) * size});
  std::string &bytes = copies.emplace_back(
      getNumElements(tensor.shape).value_or(0) * size, '\0');
  int64_t e = 0;
  forEachElement(tensor.shape, {{0, tensor.strides}},
                 [&](llvm::ArrayRef<int64_t> offsets) {
                   std::memcpy(bytes.data() + size * e++,
                               tensor.data + offsets[0] * size, size);
                 });
  TensorData copy = tensor;
  copy.strides = getRowMajorStrides(tensor.shape);
  copy.data = bytes.data();
  return copy;
}

//===- CheckpointModel.cpp - A checkpoint that knows no format ------------===//

#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Engine/Executor.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/MappedFileReader.h"

using namespace ucp;

/// Every state, its name and the power of the scale it carries: the one
/// table of them.
static constexpr struct {
  TensorState state;
  const char *name;
  int scalePower;
} kStates[] = {{TensorState::Master, "fp32", 1},
               {TensorState::ExpAvg, "exp_avg", -1},
               {TensorState::ExpAvgSq, "exp_avg_sq", -2},
               {TensorState::Weight, "param", 1}};

llvm::StringRef ucp::getStateName(TensorState state) {
  return kStates[static_cast<size_t>(state)].name;
}

int ucp::getScalePower(TensorState state) {
  return kStates[static_cast<size_t>(state)].scalePower;
}

std::optional<TensorState> ucp::parseStateName(llvm::StringRef name) {
  for (const auto &entry : kStates)
    if (name == entry.name)
      return entry.state;
  return std::nullopt;
}

std::string ucp::listStateNames() {
  std::string names;
  for (size_t i = 0; i < std::size(kStates); ++i)
    names += (i == 0                        ? ""
              : i + 1 == std::size(kStates) ? " or "
                                            : ", ") +
             std::string(kStates[i].name);
  return names;
}

std::optional<DType> CheckpointTensor::getType(TensorState state) const {
  for (const auto &[held, type] : states)
    if (held == state)
      return type;
  return std::nullopt;
}

ParamMap ucp::getWholeTensorMap(llvm::StringRef name,
                                llvm::ArrayRef<int64_t> shape) {
  ParamMap map;
  map.name = name.str();
  map.logicalShape.assign(shape.begin(), shape.end());
  Shard &shard = map.shards.emplace_back();
  shard.shape = map.logicalShape;
  if (getNumElements(shape).value_or(0) > 0) {
    Extents strides = getRowMajorStrides(shape);
    shard.pieces.push_back(
        {map.logicalShape, {0, strides}, {0, strides}, {0}, 1.0});
  }
  return map;
}

CheckpointSource::~CheckpointSource() = default;

ProgramRun CheckpointSource::getRun(size_t index, TensorState state,
                                    const CopyProgram &program) const {
  const CheckpointTensor &tensor = getTensors()[index];
  ProgramRun run{
      &program, {}, *tensor.getType(state), getScalePower(state), tensor.name};
  for (const Shard &shard : tensor.map.shards)
    if (const char *data = getShard(index, state, shard.rank))
      run.buffers.sources[shard.rank] = data;
  return run;
}

std::optional<FileBytes> CheckpointSource::getShardBytes(size_t index,
                                                         TensorState state,
                                                         int64_t rank) const {
  const CheckpointTensor &tensor = getTensors()[index];
  std::optional<DType> type = tensor.getType(state);
  const char *data = getShard(index, state, rank);
  const llvm::MemoryBuffer *buffer = getShardBuffer(index, state, rank);
  if (!type || !data || !buffer)
    return std::nullopt;
  for (const Shard &shard : tensor.map.shards)
    if (shard.rank == rank)
      return FileBytes{
          buffer->getBufferIdentifier().str(), data - buffer->getBufferStart(),
          getNumElements(shard.shape).value_or(0) * getElementSize(*type)};
  return std::nullopt;
}

void CheckpointSource::addStateBytes(size_t index, TensorState state,
                                     std::vector<FileBytes> &reads) const {
  for (const Shard &shard : getTensors()[index].map.shards)
    if (std::optional<FileBytes> bytes =
            getShardBytes(index, state, shard.rank))
      reads.push_back(std::move(*bytes));
}

void CheckpointSource::releaseShard(size_t index, TensorState state,
                                    int64_t rank, const char *data,
                                    size_t bytes) const {
  if (const llvm::MemoryBuffer *buffer = getShardBuffer(index, state, rank))
    releaseMappedPages(*buffer, data, bytes);
}

llvm::Error CheckpointSource::readShard(
    size_t index, TensorState state, int64_t rank, size_t from, size_t bytes,
    size_t chunkBytes,
    llvm::function_ref<void(llvm::StringRef, size_t)> consume) const {
  return readMappedBytes(getShardBuffer(index, state, rank),
                         getShard(index, state, rank) + from, bytes,
                         chunkBytes, consume);
}

llvm::Error ucp::supplyReads(const InputSupply &supply, ProcessGroup *group,
                             llvm::Expected<std::vector<FileBytes>> reads) {
  llvm::Error named = reads ? llvm::Error::success() : reads.takeError();
  if (group)
    named = group->agree(std::move(named));
  if (named)
    return named;
  return supply(std::move(*reads));
}

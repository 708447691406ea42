//===- GeneratedModel.cpp - The generator's model and values --------------===//

#include "GeneratedModel.h"
#include "ucp/Formats/Torch/TorchFileWriter.h"
#include "ucp/Map/Indexing.h"

#include <algorithm>
#include <cstring>

using namespace ucp;
using namespace ucp::generator;

Flattening::Flattening(const std::vector<int64_t> &elements, int64_t dp)
    : sizes(elements), dp(dp) {
  for (int64_t count : elements) {
    offsets.push_back(total);
    total += count;
  }
  int64_t alignment = 2 * dp;
  partition = (total + alignment - 1) / alignment * alignment / dp;
}

int64_t Flattening::getPadding(int64_t rank) const {
  int64_t begin = rank * partition, end = begin + partition;
  return end - std::clamp(total, begin, end);
}

std::pair<int64_t, int64_t> Flattening::getSlice(size_t i,
                                                 int64_t rank) const {
  int64_t begin = rank * partition;
  int64_t lo = std::max(begin, offsets[i]);
  int64_t hi = std::min(begin + partition, offsets[i] + sizes[i]);
  return lo < hi ? std::pair<int64_t, int64_t>{lo - begin, hi - lo}
                 : std::pair<int64_t, int64_t>{0, 0};
}

void Model::layOut(int64_t dp) {
  size_t count = 0;
  for (const Param &param : params)
    count = std::max(count, param.group + 1);
  groups.assign(count, {});
  std::vector<std::vector<int64_t>> elements(count);
  for (size_t i = 0; i < params.size(); ++i) {
    Param &param = params[i];
    param.elements = *getNumElements(param.shape);
    groups[param.group].push_back(i);
    elements[param.group].push_back(param.elements);
  }
  layouts.clear();
  for (size_t g = 0; g < count; ++g) {
    layouts.emplace_back(elements[g], dp);
    for (size_t i = 0; i < groups[g].size(); ++i)
      params[groups[g][i]].offset = layouts[g].offsets[i];
  }
}

float ucp::generator::getValue(uint64_t seed, State state, size_t id,
                               int64_t element) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (uint64_t(state) << 56) ^
               (uint64_t(id) << 36) ^ uint64_t(element);
  // splitmix64's finaliser.
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  float unit = float(x >> 40) * (1.0f / float(1 << 24)); // [0, 1)
  switch (state) {
  case State::Fp32:
    return (unit - 0.5f) * 0.1f;
  case State::ExpAvg:
    return (unit - 0.5f) * 1e-3f;
  case State::ExpAvgSq:
    return unit * 1e-6f;
  }
  return 0;
}

static uint16_t roundToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t lsb = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7FFF + lsb) >> 16);
}

void ucp::generator::store(DType type, char *data, int64_t index,
                           float value) {
  if (type == DType::BF16) {
    uint16_t bits = roundToBfloat16(value);
    std::memcpy(data + 2 * index, &bits, 2);
  } else {
    std::memcpy(data + 4 * index, &value, 4);
  }
}

llvm::Error ucp::generator::writeFile(const std::string &path,
                                      const PickleDocument &document,
                                      llvm::ArrayRef<StorageFill> storages) {
  auto writer = TorchFileWriter::create(path, document);
  if (!writer)
    return writer.takeError();
  std::vector<char> buffer;
  for (const StorageFill &storage : storages) {
    buffer.assign(storage.bytes, 0);
    storage.fill(buffer.data());
    if (llvm::Error error = (*writer)->writeStorage(
            storage.key, {llvm::StringRef(buffer.data(), buffer.size())}))
      return error;
  }
  return (*writer)->commit(/*durable=*/false);
}

//===- OpenReads.cpp - What opening a checkpoint read already -------------===//

#include "ucp/Checkpoint/OpenReads.h"

using namespace ucp;

void OpenReads::addScan(size_t index, TensorState state, int64_t rank,
                        const ValueScan &scan) {
  std::lock_guard<std::mutex> lock(mutex);
  scans.insert_or_assign({index, state, rank}, scan);
}

std::optional<ValueScan> OpenReads::findScan(size_t index, TensorState state,
                                             int64_t rank) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = scans.find({index, state, rank});
  if (found == scans.end())
    return std::nullopt;
  return found->second;
}

//===- OptimizerCopyCheck.cpp - ZeRO stage 0's second optimizer record ----===//
//
// With bf16 and ZeRO stage 0 (BF16_Optimizer) DeepSpeed saves the optimizer
// twice: in each model-parallel rank's model states (`optimizer`) and in
// that rank's optimizer files. A resumed engine restores the first (it
// reads the optimizer files only with ZeRO on), while every job here reads
// the second, so the two must be one record: DP rank 0's. Compared at
// open, partition for partition and step for step, so that a conversion
// never differs silently from what DeepSpeed would resume.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "ucp/Support/Error.h"

#include <cstring>

using namespace ucp;
using llvm::Error;
using llvm::Expected;

/// The first element at which the flat fp32 partitions `a` and `b` of
/// `length` elements differ, if one does.
static std::optional<int64_t> findDifference(const TensorData &a,
                                             const TensorData &b,
                                             int64_t length) {
  if (std::memcmp(a.data, b.data, 4 * length) == 0)
    return std::nullopt; // The usual case, at memory speed.
  for (int64_t i = 0; i < length; ++i)
    if (std::memcmp(a.data + 4 * i, b.data + 4 * i, 4) != 0)
      return i;
  return std::nullopt;
}

bool ucp::comparesOptimizerCopy(const CheckShare &share, size_t rank) {
  return share.compareWeights &&
         rank % static_cast<size_t>(std::max(share.processes, 1)) ==
             static_cast<size_t>(share.process);
}

Error DeepSpeedReader::checkOptimizerCopies() const {
  static const char *const kStates[] = {"fp32 partition", "exp_avg",
                                        "exp_avg_sq"};
  for (size_t m = 0; m < checkpoint.modelFiles.size() && !files.zero3; ++m) {
    const TorchFile &model = *checkpoint.modelFiles[m];
    std::optional<PickleCursor> copy =
        PickleCursor(model.getDocument()).find("optimizer");
    if (!copy || copy->is(PickleValue::None))
      continue;
    Expected<TensorStates> copied =
        readTensorStates(model, /*zero3=*/false, "optimizer");
    if (!copied)
      return copied.takeError();
    const TensorStates &saved = optimizers[m]; // DP rank 0's.
    const TorchFile &file = *checkpoint.ranks[m].file;
    auto differ = [&](const std::string &what) {
      return makeError(model.getPath() +
                       ": its 'optimizer', which DeepSpeed restores at ZeRO "
                       "stage 0, is not the optimizer_state_dict of " +
                       file.getPath() + ": " + what +
                       " (a file of another run or step?)");
    };
    if (copied->groups.size() != saved.groups.size())
      return differ(std::to_string(copied->groups.size()) + " groups, not " +
                    std::to_string(saved.groups.size()));
    for (size_t g = 0; g < saved.groups.size(); ++g) {
      const RankGroup &a = copied->groups[g], &b = saved.groups[g];
      std::string group = "group " + std::to_string(g) + "'s ";
      if (a.slices != b.slices)
        return differ(group + "param_slice_mappings differ");
      if (a.moments != b.moments)
        return differ(group + "Adam moments are in one record only");
      for (size_t s = 0; s < (b.moments ? 3 : 1); ++s) {
        if (a.lengths[s] != b.lengths[s])
          return differ(group + kStates[s] + " has " +
                        std::to_string(a.lengths[s]) + " elements, not " +
                        std::to_string(b.lengths[s]));
        // The elements: on this process's share of the model-parallel
        // ranks (getWeightCheckReads names what they read).
        if (!comparesOptimizerCopy(share, m))
          continue;
        if (std::optional<int64_t> at =
                findDifference(model.getTensor(a.partitions[s]),
                               file.getTensor(b.partitions[s]), b.lengths[s]))
          return differ(group + kStates[s] + " differs at element " +
                        std::to_string(*at));
      }
      Expected<double> stepA = a.step ? readStepValue(model, *a.step) : -1.0;
      Expected<double> stepB = b.step ? readStepValue(file, *b.step) : -1.0;
      if (!stepA || !stepB)
        return llvm::joinErrors(stepA.takeError(), stepB.takeError());
      if (*stepA != *stepB)
        return differ(group + "step differs");
    }
  }
  return Error::success();
}

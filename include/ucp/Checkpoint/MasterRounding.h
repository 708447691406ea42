//===- MasterRounding.h - Weights that are their masters rounded -*- C++ -*-===//
//
// A mixed-precision optimizer keeps an fp32 master of every trainable
// weight and, after each step, writes the master into the weight, rounding
// to the weight's type (round to nearest even). At save time the two agree
// element for element, which is what lets a reader tell a weight file of
// one run or rank from another's. These are the comparisons, run over every
// trainable weight of a checkpoint: at memory speed where the processor
// has AVX2.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CHECKPOINT_MASTERROUNDING_H
#define UCP_CHECKPOINT_MASTERROUNDING_H

#include "ucp/Element/DType.h"

#include <cstdint>

namespace ucp {

/// Whether the weight element at `weight` (of `type`) is the fp32 `master`
/// written to that type. A NaN master matches any NaN weight. Types that
/// masters are not written to (integers, 8-bit floats) always match.
bool matchesMaster(DType type, const char *weight, float master);

/// Whether all `count` row-major weights of `type` at `weights` match their
/// fp32 masters at `masters` (matchesMaster, element for element).
bool allMatchMasters(DType type, const char *weights, const char *masters,
                     int64_t count);

} // namespace ucp

#endif // UCP_CHECKPOINT_MASTERROUNDING_H

//===- WalkingVerifier.h - The verifier's element-walk oracle --*- C++ -*-===//
//
// verifyParamMapByWalking answers the questions of ucp::verifyParamMap by
// visiting every element of F and of every shard, as the spec's reference
// does: the oracle of the verifier's tests and the baseline of its
// benchmark, outside the production library. Both feed the same
// ElementClassifier, so their reports are identical.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TEST_UNIT_WALKINGVERIFIER_H
#define UCP_TEST_UNIT_WALKINGVERIFIER_H

#include "ucp/Analysis/MapVerifier.h"

namespace ucp::testing {

/// Verifies `map` by visiting every element of F and of every shard (at
/// most 64 ranks).
VerifyReport verifyParamMapByWalking(const ParamMap &map);

} // namespace ucp::testing

#endif // UCP_TEST_UNIT_WALKINGVERIFIER_H

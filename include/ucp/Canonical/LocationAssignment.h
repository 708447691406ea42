//===- LocationAssignment.h - Locations derived from the pieces -*- C++ -*-===//
//
// A piece's `locations` are the ranks holding identical data for its block:
// a fact the pieces of all shards determine. A map built by composing
// others (a TP map refined by ZeRO's DP fragments, say) knows each rank's
// pieces but not yet who else holds them; this derives it.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_CANONICAL_LOCATIONASSIGNMENT_H
#define UCP_CANONICAL_LOCATIONASSIGNMENT_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// Returns `map` in canonical form with every piece's locations the ranks
/// whose shards hold its elements with the same scale; pieces are cut
/// wherever that set changes. The locations `map` carries are ignored.
/// Costs one sweep of F over the boxes of every piece.
llvm::Expected<ParamMap> assignLocations(const ParamMap &map);

} // namespace ucp

#endif // UCP_CANONICAL_LOCATIONASSIGNMENT_H

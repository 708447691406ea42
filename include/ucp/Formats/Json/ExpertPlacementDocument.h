//===- ExpertPlacementDocument.h - AutoEP descriptors in JSON ---*- C++ -*-===//
//
// Reads AutoEP's placement descriptor (deepspeed-facts §5):
//
//   {"version": 1, "num_experts": N, "ep_size": P,
//    "ranks": [{"rank": r, "experts": [global ids in local order]}, ...]}
//
// Entries are looked up by "rank", not by position; booleans are not
// integers; the descriptor is validated as ucp::validateExpertPlacement says.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_JSON_EXPERTPLACEMENTDOCUMENT_H
#define UCP_FORMATS_JSON_EXPERTPLACEMENTDOCUMENT_H

#include "ucp/Layout/ExpertPlacement.h"

namespace ucp {

/// Parses and validates a placement descriptor; errors carry the JSON path.
llvm::Expected<ExpertPlacement> parseExpertPlacement(llvm::StringRef text);

} // namespace ucp

#endif // UCP_FORMATS_JSON_EXPERTPLACEMENTDOCUMENT_H

//===- Passes.h - ucp dialect passes ----------------------------*- C++ -*-===//

#ifndef UCP_DIALECT_UCP_TRANSFORMS_PASSES_H
#define UCP_DIALECT_UCP_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace ucp {

#define GEN_PASS_DECL
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"

} // namespace ucp

#endif // UCP_DIALECT_UCP_TRANSFORMS_PASSES_H

//===- Passes.h - ucp dialect passes ----------------------------*- C++ -*-===//

#ifndef UCP_DIALECT_UCP_TRANSFORMS_PASSES_H
#define UCP_DIALECT_UCP_TRANSFORMS_PASSES_H

#include "ucp/Dialect/UCP/Transforms/PassOptionTypes.h"
#include "ucp/Plan/TransferPlan.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace ucp {

#define GEN_PASS_DECL
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"

/// Creates the compose pass with its target maps in memory: `targets`, a
/// module of ucp.param ops that must outlive the pass, replaces the
/// `target` option, and `policy` the policy options.
std::unique_ptr<mlir::Pass> createUCPComposePass(mlir::ModuleOp targets,
                                                 const ReplicaPolicy &policy);

} // namespace ucp

#endif // UCP_DIALECT_UCP_TRANSFORMS_PASSES_H

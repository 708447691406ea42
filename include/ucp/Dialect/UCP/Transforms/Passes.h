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

/// Registers the ucp dialect and every dialect the ucp passes read or
/// produce: those whose values a layout annotates (func, arith, tensor,
/// memref), MLIR's mesh dialect (--ucp-import-mesh) and scf
/// (--ucp-plans-to-memref), so that a tool reads back what it writes.
void registerUCPDialects(mlir::DialectRegistry &registry);

/// Creates the compose pass with its target maps in memory: `targets`, a
/// module of ucp.param ops that must outlive the pass, replaces the
/// `target` option, and `policy` the policy options.
std::unique_ptr<mlir::Pass> createUCPComposePass(mlir::ModuleOp targets,
                                                 const ReplicaPolicy &policy);

} // namespace ucp

#endif // UCP_DIALECT_UCP_TRANSFORMS_PASSES_H

//===- ReshardPipeline.h - The planner as a pass pipeline -------*- C++ -*-===//
//
// The planner's steps (ucp/Plan/Planner.h) on IR: --ucp-verify,
// --ucp-compose into the target maps, --ucp-lower-copies. affine-opt runs
// it as the named pipeline `ucp-reshard-pipeline`; affine-run, whose maps
// are read as IR so that a message points into the file at fault, plans
// them with planTransfers here. Both run the planner's own functions, so
// the checks a plan needs cannot differ between them and the library.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_TRANSFORMS_RESHARDPIPELINE_H
#define UCP_DIALECT_UCP_TRANSFORMS_RESHARDPIPELINE_H

#include "ucp/Dialect/UCP/Transforms/PassOptionTypes.h"
#include "ucp/Plan/CopyProgram.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace ucp {

/// The options of `ucp-reshard-pipeline`.
struct ReshardPipelineOptions
    : public mlir::PassPipelineOptions<ReshardPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("the target map (.json or .mlir)")};
  Option<ReplicaPolicy::Kind> policy{
      *this, "policy",
      llvm::cl::desc("which of several holders of the same data a copy reads"),
      llvm::cl::init(ReplicaPolicy::Local), getReplicaPolicyValues()};
  Option<RanksPerNode> ranksPerNode{
      *this, "ranks-per-node",
      llvm::cl::desc("ranks per node (at least 1), for policy=node"),
      llvm::cl::init(8)};
  Option<ScalePower> scalePower{
      *this, "scale-power",
      llvm::cl::desc("the power of the scale the moved tensors carry: 1 (a "
                     "parameter), -1 or -2 (Adam's moments), 0 (a tensor "
                     "that carries none)"),
      llvm::cl::init(1)};
};

/// Adds the reshard pipeline to `pm` (which runs on a module).
void buildReshardPipeline(mlir::OpPassManager &pm,
                          const ReshardPipelineOptions &options);

/// Registers `ucp-reshard-pipeline` with the pass registry.
void registerUCPPipelines();

/// Verifies the ucp.param ops of `sources` and composes them with the
/// target maps `targets` (another module, kept unchanged), every message at
/// the op at fault; checks that each plan can move a tensor carrying the
/// scale's power `scalePower`; and returns the copy program of every
/// parameter by name. On failure, the diagnostics have been emitted to the
/// context's handlers and `sources` is left as the failing pass left it.
mlir::FailureOr<TransferPrograms> planTransfers(mlir::ModuleOp sources,
                                                mlir::ModuleOp targets,
                                                const ReplicaPolicy &policy,
                                                int scalePower);

/// Returns a module of the ucp.param ops of `maps`, every op located at
/// `loc`: how maps that no file holds (the full tensor of extract and
/// rebuild, say) enter the pipeline.
mlir::OwningOpRef<mlir::ModuleOp> buildMapModule(llvm::ArrayRef<ParamMap> maps,
                                                 mlir::Location loc);

} // namespace ucp

#endif // UCP_DIALECT_UCP_TRANSFORMS_RESHARDPIPELINE_H

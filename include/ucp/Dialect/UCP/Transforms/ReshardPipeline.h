//===- ReshardPipeline.h - Verify, compose and lower, as one pipeline -*- C++
//-*-===//
//
// The one way maps become copy programs: --ucp-verify, --ucp-compose into
// the target maps, --ucp-lower-copies. affine-opt runs it as the named
// pipeline `ucp-reshard-pipeline`, and affine-run's extract, rebuild and
// reshard run it through planTransfers before any data moves, so that the
// checks a plan needs cannot differ between the two.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_TRANSFORMS_RESHARDPIPELINE_H
#define UCP_DIALECT_UCP_TRANSFORMS_RESHARDPIPELINE_H

#include "ucp/Runtime/CopyProgram.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace ucp {

/// The options of `ucp-reshard-pipeline`.
struct ReshardPipelineOptions
    : public mlir::PassPipelineOptions<ReshardPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("the target map (.json or .mlir)")};
  Option<std::string> policy{
      *this, "policy",
      llvm::cl::desc("replica choice: lowest, local, node or balance"),
      llvm::cl::init("local")};
  Option<int64_t> ranksPerNode{
      *this, "ranks-per-node",
      llvm::cl::desc("ranks per node, for policy=node"), llvm::cl::init(8)};
  Option<int> scalePower{
      *this, "scale-power",
      llvm::cl::desc("the power of the scale the moved tensors carry"),
      llvm::cl::init(1)};
};

/// Adds the reshard pipeline to `pm` (which runs on a module).
void buildReshardPipeline(mlir::OpPassManager &pm,
                          const ReshardPipelineOptions &options);

/// Registers `ucp-reshard-pipeline` with the pass registry.
void registerUCPPipelines();

/// Runs the reshard pipeline on `sources`, a module of ucp.param ops, with
/// the target maps `targets` (another module, kept unchanged), and returns
/// the copy program of every parameter by name. On failure, the pipeline's
/// diagnostics have been emitted to the context's handlers and `sources` is
/// left as the failing pass left it.
mlir::FailureOr<TransferPrograms> planTransfers(mlir::ModuleOp sources,
                                                mlir::ModuleOp targets,
                                                const ReplicaPolicy &policy,
                                                int scalePower);

/// Plans `sources` into `targets` as the overload above does, in a context
/// of its own, for maps no file holds; the pipeline's diagnostics become the
/// error's message, one per line.
llvm::Expected<TransferPrograms> planTransfers(llvm::ArrayRef<ParamMap> sources,
                                               llvm::ArrayRef<ParamMap> targets,
                                               const ReplicaPolicy &policy = {},
                                               int scalePower = 1);

/// Returns a module of the ucp.param ops of `maps`, every op located at
/// `loc`: how maps that no file holds (the full tensor of extract and
/// rebuild, say) enter the pipeline.
mlir::OwningOpRef<mlir::ModuleOp> buildMapModule(llvm::ArrayRef<ParamMap> maps,
                                                 mlir::Location loc);

} // namespace ucp

#endif // UCP_DIALECT_UCP_TRANSFORMS_RESHARDPIPELINE_H

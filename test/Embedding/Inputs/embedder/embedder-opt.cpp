// A tool of another project: mlir-opt with the ucp dialect and passes
// registered beside MLIR's canonicalize and cse, and a conversion of its
// own that runs both of ucp's conversion patterns in one partial
// conversion.

#include "ucp/Dialect/UCP/Conversion/MeshToUCP.h"
#include "ucp/Dialect/UCP/Conversion/UCPToMemRef.h"
#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace {

/// Gives every mesh.shard its ucp map and lowers every ucp.plan to memref
/// code, in one conversion.
struct EmbedderConvertPass
    : public mlir::PassWrapper<EmbedderConvertPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EmbedderConvertPass)
  llvm::StringRef getArgument() const final { return "embedder-convert"; }
  llvm::StringRef getDescription() const final {
    return "import mesh shardings and lower plans in one conversion";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    // The dialects the patterns produce: ucp, func, memref, scf, arith.
    ucp::registerUCPDialects(registry);
  }
  void runOnOperation() override {
    mlir::MLIRContext &context = getContext();
    mlir::SymbolTableCollection tables;
    mlir::ConversionTarget target(context);
    ucp::configureMeshToUCPConversionTarget(target);
    ucp::configureUCPToMemRefConversionTarget(target);
    mlir::RewritePatternSet patterns(&context);
    ucp::populateMeshToUCPConversionPatterns(patterns, tables);
    ucp::populateUCPToMemRefConversionPatterns(
        patterns, mlir::Float32Type::get(&context));
    if (failed(mlir::applyPartialConversion(getOperation(), target,
                                            std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  ucp::registerUCPDialects(registry);
  ucp::registerUCPPasses();
  ucp::registerUCPPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::PassRegistration<EmbedderConvertPass>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "embedder-opt\n", registry));
}

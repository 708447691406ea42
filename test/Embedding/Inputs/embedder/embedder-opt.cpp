// A tool of another project: mlir-opt with the ucp dialect and passes
// registered beside MLIR's canonicalize and cse.

#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<ucp::UCPDialect>();
  ucp::registerUCPPasses();
  ucp::registerUCPPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "embedder-opt\n", registry));
}

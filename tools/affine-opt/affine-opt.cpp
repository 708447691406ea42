//===- affine-opt.cpp - The ucp optimizer driver --------------------------===//
//
// mlir-opt for the ucp dialect: parses a module of parameter maps, runs the
// requested passes (`--ucp-verify`, ...) and prints the result. An input
// ending in `.json` is read as a map document (spec §6.2) first.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/IO/MapTranslation.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

/// Imports the map document `inputFilename` and runs the opt pipeline on it.
static LogicalResult runOnMapDocument(llvm::StringRef inputFilename,
                                      llvm::StringRef outputFilename,
                                      DialectRegistry &registry) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "affine-opt: " << error << "\n";
    return failure();
  }

  // Import, then hand the module to the usual driver as text carrying the
  // JSON-path locations, so that every mlir-opt option keeps working.
  std::string text;
  {
    MLIRContext context(registry);
    llvm::SourceMgr sourceMgr;
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    OwningOpRef<ModuleOp> module =
        ucp::importMapDocument(input->getBuffer(), inputFilename, &context);
    if (!module)
      return failure();
    llvm::raw_string_ostream os(text);
    module->print(os, OpPrintingFlags().enableDebugInfo());
  }

  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "affine-opt: " << error << "\n";
    return failure();
  }
  if (failed(
          MlirOptMain(output->os(),
                      llvm::MemoryBuffer::getMemBufferCopy(text, inputFilename),
                      registry, MlirOptMainConfig::createFromCLOptions())))
    return failure();
  output->keep();
  return success();
}

int main(int argc, char **argv) {
  // The options libLLVM registers for its code generators still work but
  // leave --help; MLIR's and ours are registered after this.
  llvm::cl::HideUnrelatedOptions({});
  DialectRegistry registry;
  registry.insert<ucp::UCPDialect>();
  ucp::registerUCPPasses();

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv,
      "affine-opt: verify and transform ucp parameter maps (.mlir or a .json "
      "map document)\n",
      registry);
  if (llvm::StringRef(inputFilename).ends_with(".json"))
    return asMainReturnCode(
        runOnMapDocument(inputFilename, outputFilename, registry));
  return asMainReturnCode(
      MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}

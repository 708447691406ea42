//===- affine-opt.cpp - The ucp optimizer driver --------------------------===//
//
// mlir-opt for the ucp dialect: parses a module of parameter maps, runs the
// requested passes (`--ucp-verify`, ...) and prints the result. An input
// ending in `.json` is read as a map document (spec §6.2) first. Inputs and
// outputs go through ucp/Support (regular files only, nesting bounded,
// outputs renamed into place only on success).
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/OutputFile.h"
#include "ucp/Support/CommandLine.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

/// Reports `error` as affine-opt's and fails.
static LogicalResult fail(llvm::Error error) {
  llvm::errs() << "affine-opt: " << llvm::toString(std::move(error)) << "\n";
  return failure();
}

/// Returns the text of the map document `input` imported as ucp IR, with
/// its JSON-path locations, so that every mlir-opt option keeps working on
/// it; null after reporting a malformed document.
static std::unique_ptr<llvm::MemoryBuffer>
importMapDocument(const llvm::MemoryBuffer &input, DialectRegistry &registry) {
  std::string text;
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = ucp::importMapDocument(
      input.getBuffer(), input.getBufferIdentifier(), &context);
  if (!module)
    return nullptr;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo());
  return llvm::MemoryBuffer::getMemBufferCopy(text,
                                              input.getBufferIdentifier());
}

/// mlir-opt's processing of `inputFilename` into `outputFilename`.
static LogicalResult run(llvm::StringRef inputFilename,
                         llvm::StringRef outputFilename,
                         DialectRegistry &registry) {
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleaveComma(registry.getDialectNames(), llvm::outs());
    llvm::outs() << "\n";
    return success();
  }
  bool json = inputFilename.ends_with(".json");
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> input =
      ucp::readTextInputFile(inputFilename, json ? ucp::TextSyntax::Json
                                                 : ucp::TextSyntax::Mlir);
  if (!input)
    return fail(input.takeError());
  if (json) {
    *input = importMapDocument(**input, registry);
    if (!*input)
      return failure();
  }
  llvm::Expected<std::unique_ptr<ucp::OutputFile>> output =
      ucp::OutputFile::create(outputFilename);
  if (!output)
    return fail(output.takeError());
  if (failed(MlirOptMain((*output)->os(), std::move(*input), registry, config)))
    return failure();
  if (llvm::Error error = (*output)->commit())
    return fail(std::move(error));
  return success();
}

int main(int argc, char **argv) {
  // The options libLLVM registers for its code generators still work but
  // leave --help; MLIR's and ours are registered after this.
  llvm::cl::HideUnrelatedOptions({});
  DialectRegistry registry;
  ucp::registerUCPDialects(registry);
  ucp::registerUCPPasses();
  ucp::registerUCPPipelines();
  ucp::registerMapFileReader();
  // The upstream passes a pipeline author expects beside ours.
  registerCanonicalizerPass();
  registerCSEPass();
  registerSymbolDCEPass();
  registerInlinerPass();

  ucp::setVersionPrinter("affine-opt");
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv,
      "affine-opt: verify and transform ucp parameter maps (.mlir or a .json "
      "map document)\n",
      registry);
  if (llvm::Error error = ucp::checkOptionsGivenOnce(argc, argv))
    return asMainReturnCode(fail(std::move(error)));
  return asMainReturnCode(run(inputFilename, outputFilename, registry));
}

//===- TranslateMain.cpp - affine-translate's driver ----------------------===//

#include "TranslateMain.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/OutputFile.h"
#include "ucp/Support/CommandLine.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
namespace cl = llvm::cl;

/// Reports `error` as affine-translate's; returns the exit code.
static int fail(llvm::Error error) {
  llvm::errs() << "affine-translate: " << llvm::toString(std::move(error))
               << "\n";
  return 1;
}

int runTranslateMain(int argc, char **argv, llvm::StringRef overview) {
  static cl::opt<std::string> inputFilename(
      cl::Positional, cl::desc("<input file>"), cl::init("-"));
  static cl::opt<std::string> outputFilename("o", cl::desc("Output filename"),
                                             cl::value_desc("filename"),
                                             cl::init("-"));
  static cl::opt<bool> splitInputFile(
      "split-input-file",
      cl::desc("Split the input file into pieces and translate each "
               "independently"));
  static cl::opt<bool> verifyDiagnostics(
      "verify-diagnostics",
      cl::desc("Check that emitted diagnostics match expected-* lines"));
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerTranslationCLOptions();
  static cl::opt<const Translation *, false, TranslationParser> translation(
      "", cl::desc("Translation to perform"), cl::Required);
  ucp::setVersionPrinter("affine-translate");
  cl::ParseCommandLineOptions(argc, argv, overview);
  if (llvm::Error error = ucp::checkOptionsGivenOnce(argc, argv))
    return fail(std::move(error));

  // Every input, JSON included, is bounded by MLIR's rules: they count
  // JSON's brackets too.
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> input =
      ucp::readTextInputFile(inputFilename, ucp::TextSyntax::Mlir);
  if (!input)
    return fail(input.takeError());
  llvm::Expected<std::unique_ptr<ucp::OutputFile>> output =
      ucp::OutputFile::create(outputFilename);
  if (!output)
    return fail(output.takeError());

  auto translate = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                       llvm::raw_ostream &os) -> LogicalResult {
    MLIRContext context;
    context.printOpOnDiagnostic(!verifyDiagnostics);
    auto sourceMgr = std::make_shared<llvm::SourceMgr>();
    sourceMgr->AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
    if (!verifyDiagnostics) {
      SourceMgrDiagnosticHandler handler(*sourceMgr, &context);
      return (*translation)(sourceMgr, os, &context);
    }
    SourceMgrDiagnosticVerifierHandler handler(*sourceMgr, &context);
    (void)(*translation)(sourceMgr, os, &context);
    return handler.verify();
  };
  if (failed(splitAndProcessBuffer(
          std::move(*input), translate, (*output)->os(),
          splitInputFile ? kDefaultSplitMarker : "", kDefaultSplitMarker)))
    return 1;
  if (llvm::Error error = (*output)->commit())
    return fail(std::move(error));
  return 0;
}

//===- MlirFuzzer.cpp - Fuzzes the ucp MLIR text reader -------------------===//
//
// Text the parser and the op verifiers accept is IR of the ucp dialect; the
// passes every tool runs on it (verify, canonicalize, and for plans the
// lowering) must not crash, whatever they say of it, and its map document
// exports.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace ucp;
using namespace ucp::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *created = new mlir::MLIRContext();
    created->loadDialect<UCPDialect>();
    created->disableMultithreading();
    return created;
  }();
  // Diagnostics are the expected answer to most inputs: not printed.
  mlir::ScopedDiagnosticHandler quiet(
      context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module = parseMlirText(
      llvm::MemoryBuffer::getMemBufferCopy(asText(data, size), "fuzz.mlir"),
      context);
  if (!module)
    return 0;
  std::string text;
  llvm::raw_string_ostream os(text);
  (void)exportMapDocument(*module, os);
  mlir::PassManager pm(context);
  pm.addPass(createUCPVerifyPass());
  pm.addPass(createUCPCanonicalizePass());
  pm.addPass(createUCPLowerCopiesPass());
  (void)pm.run(*module);
  return 0;
}

//===- MapTranslationRegistration.cpp - affine-translate's translations ---===//
//
// The translations affine-translate offers, registered with MLIR's
// translation registry: the imports and exports of MapTranslation.cpp and
// the CUDA emission of copy programs. Apart from MapTranslation itself, so
// that what reads and writes map modules (the passes, the plugins) does not
// pull in mlir-translate's registry.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"
#include "ucp/Engine/CopyProgramToCuda.h"
#include "ucp/Plan/CopyProgram.h"

#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace ucp;

/// An import of a document (its text, its name, the context) as ucp ops.
using Importer = OwningOpRef<ModuleOp> (*)(llvm::StringRef, llvm::StringRef,
                                           MLIRContext *);

/// Registers `import` as the translation `name` (kept alive by `slot`).
static void registerImport(std::optional<TranslateToMLIRRegistration> &slot,
                           llvm::StringRef name, llvm::StringRef description,
                           Importer import) {
  slot.emplace(name, description,
               [import](llvm::SourceMgr &sourceMgr,
                        MLIRContext *context) -> OwningOpRef<Operation *> {
                 const llvm::MemoryBuffer *buffer =
                     sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
                 return import(buffer->getBuffer(),
                               buffer->getBufferIdentifier(), context);
               });
}

void ucp::registerMapTranslations() {
  // Once, as the function-local registrations below.
  static std::optional<TranslateToMLIRRegistration> imports[4];
  [[maybe_unused]] static bool registered = [] {
    registerImport(imports[0], "import-json",
                   "import a JSON map document (spec §6.2) as ucp ops",
                   importMapDocument);
    registerImport(
        imports[1], "import-index-map",
        "derive canonical ucp maps from per-rank index maps (spec §5)",
        importIndexMapDocument);
    registerImport(
        imports[2], "import-plan-json",
        "import a JSON plan document (--export-plan-json's) as ucp.plan ops",
        importPlanDocument);
    registerImport(
        imports[3], "import-legacy",
        "lower today's checkpoint metadata (category patterns, AutoTP "
        "restore keys) to ucp maps",
        importLegacyDocument);
    return true;
  }();
  auto registerDialects = [](DialectRegistry &registry) {
    registry.insert<UCPDialect>();
  };
  static TranslateFromMLIRRegistration exportJson(
      "export-json", "export ucp ops as a JSON map document (spec §6.2)",
      [](Operation *op, llvm::raw_ostream &os) {
        return exportMapDocument(cast<ModuleOp>(op), os);
      },
      registerDialects);
  static TranslateFromMLIRRegistration renderSvg(
      "render-svg",
      "draw every parameter map (F coloured by the rank holding each block, "
      "each rank's shard beside it) and every transfer plan (source shards, "
      "copies as bands, target shards) as an SVG picture",
      [](Operation *op, llvm::raw_ostream &os) {
        return renderPicture(cast<ModuleOp>(op), PictureFormat::Svg, os);
      },
      registerDialects);
  static TranslateFromMLIRRegistration renderPng(
      "render-png",
      "draw what --render-svg draws as a PNG picture (where the build found "
      "librsvg)",
      [](Operation *op, llvm::raw_ostream &os) {
        return renderPicture(cast<ModuleOp>(op), PictureFormat::Png, os);
      },
      registerDialects);
  static TranslateFromMLIRRegistration exportPlanJson(
      "export-plan-json",
      "export ucp transfer plans as a JSON plan document (segments, fills "
      "and shard shapes; --import-plan-json reads it)",
      [](Operation *op, llvm::raw_ostream &os) {
        return exportPlanDocument(cast<ModuleOp>(op), os);
      },
      registerDialects);
  static llvm::cl::opt<std::string> cudaDType(
      "cuda-dtype",
      llvm::cl::desc("--ucp-to-cuda: the element type the kernels move (f32, "
                     "bf16, f16, f64, f8e4m3, i8, ...)"),
      llvm::cl::init("f32"));
  static TranslateFromMLIRRegistration toCuda(
      "ucp-to-cuda",
      "emit CUDA C++ kernels for the transfer plans of a module (one kernel "
      "launch per plan, over all its buffers)",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        std::optional<DType> type = parseDTypeName(cudaDType);
        if (!type)
          // Errors about the module are not followed by the module itself.
          return mlir::emitError(op->getLoc())
                 << "unknown --cuda-dtype '" << cudaDType << "'";
        std::vector<std::pair<std::string, CopyProgram>> programs;
        WalkResult walked = op->walk([&](PlanOp plan) {
          CopyProgram program = lowerPlan(toTransferPlan(plan));
          if (llvm::Error error =
                  checkFactors(program, *type, plan.getSymName())) {
            plan.emitError(llvm::toString(std::move(error)));
            return WalkResult::interrupt();
          }
          programs.emplace_back(plan.getSymName().str(), std::move(program));
          return WalkResult::advance();
        });
        if (walked.wasInterrupted())
          return failure();
        if (programs.empty())
          return mlir::emitError(op->getLoc())
                 << "no ucp.plan to emit; compose maps first with affine-opt "
                    "--ucp-compose";
        llvm::Expected<CudaModule> module = emitCuda(programs, *type);
        if (!module)
          return mlir::emitError(op->getLoc())
                 << llvm::toString(module.takeError());
        os << module->source;
        return success();
      },
      registerDialects);
  static TranslateFromMLIRRegistration summarize(
      "summarize",
      "print a table of every parameter map (shape, world, pieces per rank, "
      "elements, storage, verification status) and of every transfer plan "
      "(copies, fills, elements moved)",
      [](Operation *op, llvm::raw_ostream &os) {
        return printModuleSummary(cast<ModuleOp>(op), os);
      },
      registerDialects);
}

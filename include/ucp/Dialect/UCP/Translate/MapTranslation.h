//===- MapTranslation.h - Map documents <-> ucp modules ---------*- C++ -*-===//

#ifndef UCP_DIALECT_UCP_TRANSLATE_MAPTRANSLATION_H
#define UCP_DIALECT_UCP_TRANSLATE_MAPTRANSLATION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "ucp/Formats/Svg/Picture.h"
#include "ucp/Map/ParamMap.h"
#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

namespace ucp {

/// Imports the map document `text` (read from `filename`) as a module of
/// `ucp.param` ops, each located at its JSON path. Emits a diagnostic and
/// returns null on malformed input.
mlir::OwningOpRef<mlir::ModuleOp> importMapDocument(llvm::StringRef text,
                                                    llvm::StringRef filename,
                                                    mlir::MLIRContext *context);

/// Parses MLIR `text` into a module after bounding its nesting
/// (ucp/Support/NestingDepth.h). Emits a diagnostic and returns null on
/// malformed input.
mlir::OwningOpRef<mlir::ModuleOp>
parseMlirText(std::unique_ptr<llvm::MemoryBuffer> text,
              mlir::MLIRContext *context);

/// Reads the parameter maps of `path` into a module: a `.json` map document
/// imported (ops located at their JSON paths) or a `.mlir` file parsed. A
/// file that holds no parameter, or holds transfer plans, is refused: it is
/// not a map. Emits a diagnostic and returns null on failure.
mlir::OwningOpRef<mlir::ModuleOp> readMapModule(llvm::StringRef path,
                                                mlir::MLIRContext *context);

/// Makes readMapModule the reader of map files the passes use
/// (ucp/Dialect/UCP/IR/MapFileReader.h): what --ucp-compose target=FILE
/// reads.
void registerMapFileReader();

/// Writes the map document of every `ucp.param` in `module` to `os`.
mlir::LogicalResult exportMapDocument(mlir::ModuleOp module,
                                      llvm::raw_ostream &os);

/// Draws every `ucp.param` and then every `ucp.plan` in `module` as one
/// picture in `format` (ucp/Formats/Svg/Picture.h) on `os`, once each map
/// is verified (the plans are, by their ops' verifiers).
mlir::LogicalResult renderPicture(mlir::ModuleOp module, PictureFormat format,
                                  llvm::raw_ostream &os);

/// Registers the `--import-json`, `--import-index-map`, `--import-legacy`,
/// `--import-plan-json`,
/// `--export-json`, `--export-plan-json` and `--summarize` translations.
/// Registers affine-translate's translations (MapTranslationRegistration).
void registerMapTranslations();

/// The index-map document (spec §5) `text` as canonical ucp maps.
mlir::OwningOpRef<mlir::ModuleOp>
importIndexMapDocument(llvm::StringRef text, llvm::StringRef filename,
                       mlir::MLIRContext *context);

/// Today's checkpoint metadata (category patterns, AutoTP restore keys) in
/// `text` lowered to ucp maps.
mlir::OwningOpRef<mlir::ModuleOp>
importLegacyDocument(llvm::StringRef text, llvm::StringRef filename,
                     mlir::MLIRContext *context);

/// The plan document `text` as ucp.plan ops.
mlir::OwningOpRef<mlir::ModuleOp>
importPlanDocument(llvm::StringRef text, llvm::StringRef filename,
                   mlir::MLIRContext *context);

/// Writes the plan document of the ucp.plan ops of `module`.
mlir::LogicalResult exportPlanDocument(mlir::ModuleOp module,
                                       llvm::raw_ostream &os);

/// Prints the summary tables of the maps and the plans of `module`.
mlir::LogicalResult printModuleSummary(mlir::ModuleOp module,
                                       llvm::raw_ostream &os);

/// Prints one line per parameter (shape, world, pieces per rank, elements,
/// replication, verification status) and a total: `--summarize`'s table.
void printMapSummary(llvm::ArrayRef<ParamMap> maps, llvm::raw_ostream &os);

/// Prints one line per plan (worlds, copies, fills, elements copied and how
/// many of them cross ranks) and a total.
void printPlanSummary(llvm::ArrayRef<TransferPlan> plans,
                      llvm::raw_ostream &os);

} // namespace ucp

#endif // UCP_DIALECT_UCP_TRANSLATE_MAPTRANSLATION_H

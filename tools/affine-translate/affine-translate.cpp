//===- affine-translate.cpp - Map documents in and out of ucp -------------===//
//
// mlir-translate for the ucp dialect: `--import-json` reads a map document
// (spec §6.2) into ucp ops, `--export-json` writes one, `--summarize` prints
// a table of a module's parameters.
//
//===----------------------------------------------------------------------===//

#include "ucp/IO/MapTranslation.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  ucp::registerMapTranslations();
  return mlir::failed(mlir::mlirTranslateMain(
             argc, argv,
             "affine-translate: convert ucp parameter maps to and from JSON"))
             ? 1
             : 0;
}

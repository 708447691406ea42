//===- affine-translate.cpp - Map documents in and out of ucp -------------===//
//
// mlir-translate for the ucp dialect: `--import-json` reads a map document
// (spec §6.2) into ucp ops, `--export-json` writes one, `--summarize` prints
// a table of a module's parameters, `--import-index-map` derives canonical
// maps from index maps, `--layout NAME` builds the map of one of
// DeepSpeed's layouts (`--layout x --help` lists its options), and
// `--import-deepspeed CKPT/TAG` prints the maps of a DeepSpeed checkpoint.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedCommand.h"
#include "LayoutCommand.h"
#include "TranslateMain.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"

#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  if (isLayoutCommand(argc, argv))
    return runLayoutCommand(argc, argv);
  if (isDeepSpeedCommand(argc, argv))
    return runDeepSpeedCommand(argc, argv);
  // The options libLLVM registers for its code generators still work but
  // leave --help; MLIR's and ours are registered after this.
  llvm::cl::HideUnrelatedOptions({});
  ucp::registerMapTranslations();
  return runTranslateMain(
      argc, argv,
      "affine-translate: convert ucp parameter maps to and from JSON\n"
      "(`affine-translate --layout NAME --help` builds layout maps;\n"
      "`affine-translate --import-deepspeed --help` reads DeepSpeed "
      "checkpoints)\n");
}

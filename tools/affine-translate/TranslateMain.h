//===- TranslateMain.h - affine-translate's driver --------------*- C++ -*-===//
//
// mlir-translate's driver (a translation flag, an input, `-o`,
// `--split-input-file`, `--verify-diagnostics`), reading and writing through
// ucp/Support: a regular input file or `-` only, its nesting bounded before
// any parser sees it, and the output renamed into place only when the
// translation succeeds.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TOOLS_AFFINE_TRANSLATE_TRANSLATEMAIN_H
#define UCP_TOOLS_AFFINE_TRANSLATE_TRANSLATEMAIN_H

#include "llvm/ADT/StringRef.h"

/// Runs the translation the command line asks for; returns the exit code.
int runTranslateMain(int argc, char **argv, llvm::StringRef overview);

#endif // UCP_TOOLS_AFFINE_TRANSLATE_TRANSLATEMAIN_H

//===- UniversalCommand.h - affine-run ds-to-universal ----------*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_RUN_UNIVERSALCOMMAND_H
#define UCP_TOOLS_AFFINE_RUN_UNIVERSALCOMMAND_H

#include "llvm/Support/CommandLine.h"

/// The options of ds-to-universal.
llvm::cl::OptionCategory &getUniversalCategory();
/// Whether the command line named ds-to-universal.
bool isUniversalCommand();
/// Runs ds-to-universal; returns the exit status.
int runUniversalCommand();

#endif // UCP_TOOLS_AFFINE_RUN_UNIVERSALCOMMAND_H

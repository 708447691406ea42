//===- DeepSpeedCommands.h - affine-run's DeepSpeed commands ----*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H
#define UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H

#include "llvm/Support/CommandLine.h"

/// The options of ds-to-universal and ds-retarget.
llvm::cl::OptionCategory &getDeepSpeedCategory();
/// Whether the command line named ds-to-universal or ds-retarget.
bool isDeepSpeedCommand();
/// Runs the DeepSpeed command named; returns the exit status.
int runDeepSpeedCommand();

#endif // UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H

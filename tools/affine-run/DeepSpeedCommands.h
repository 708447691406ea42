//===- DeepSpeedCommands.h - affine-run's DeepSpeed commands ----*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H
#define UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H

#include "DeepSpeedOptions.h"

/// Whether the command line named a DeepSpeed command.
bool isDeepSpeedCommand();
/// Runs the DeepSpeed command named; returns the exit status.
int runDeepSpeedCommand();

#endif // UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H

//===- CheckCommand.h - affine-run check ------------------------*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_RUN_CHECKCOMMAND_H
#define UCP_TOOLS_AFFINE_RUN_CHECKCOMMAND_H

/// Whether the command line named `check`.
bool isCheckCommand();
/// Runs `check`; returns the exit status: 0 sound, 1 with findings.
int runCheckCommand();

#endif // UCP_TOOLS_AFFINE_RUN_CHECKCOMMAND_H

//===- DeepSpeedCommand.h - affine-translate --import-deepspeed -*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_TRANSLATE_DEEPSPEEDCOMMAND_H
#define UCP_TOOLS_AFFINE_TRANSLATE_DEEPSPEEDCOMMAND_H

/// Returns whether the command line asks for `--import-deepspeed`.
bool isDeepSpeedCommand(int argc, char **argv);

/// Runs `affine-translate --import-deepspeed CKPT/TAG [-o FILE] [--emit
/// mlir|json]`: prints the maps of a DeepSpeed checkpoint's fragments.
/// Returns the exit code.
int runDeepSpeedCommand(int argc, char **argv);

#endif // UCP_TOOLS_AFFINE_TRANSLATE_DEEPSPEEDCOMMAND_H

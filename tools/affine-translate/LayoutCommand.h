//===- LayoutCommand.h - affine-translate --layout --------------*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_TRANSLATE_LAYOUTCOMMAND_H
#define UCP_TOOLS_AFFINE_TRANSLATE_LAYOUTCOMMAND_H

/// Returns whether the command line asks for `--layout`.
bool isLayoutCommand(int argc, char **argv);

/// Runs `affine-translate --layout NAME [options]`: builds the map of one
/// layout and prints it as ucp IR or as a map document. Returns the exit
/// code.
int runLayoutCommand(int argc, char **argv);

#endif // UCP_TOOLS_AFFINE_TRANSLATE_LAYOUTCOMMAND_H

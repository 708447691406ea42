//===- CommandHelp.h - affine-run's help, command by command -----*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_RUN_COMMANDHELP_H
#define UCP_TOOLS_AFFINE_RUN_COMMANDHELP_H

#include <string>

/// The text --help prints above the options: for `affine-run COMMAND ...`,
/// that command's complete synopsis and an example; otherwise every
/// command's synopsis.
std::string getCommandOverview(int argc, char **argv);

#endif // UCP_TOOLS_AFFINE_RUN_COMMANDHELP_H

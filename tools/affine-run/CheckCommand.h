//===- CheckCommand.h - affine-run check ------------------------*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_RUN_CHECKCOMMAND_H
#define UCP_TOOLS_AFFINE_RUN_CHECKCOMMAND_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"

namespace ucp {
class MpiRun;
}

/// The `check` subcommand, for options that several commands take.
llvm::cl::SubCommand &getCheckCommand();
/// Whether the command line named `check`.
bool isCheckCommand();
/// Runs `check`; returns the exit status: 0 sound, 1 with findings. With
/// --mpi, starts `mpi`'s group of a job (its processes given the same
/// `arguments`) and shares the check among its processes.
int runCheckCommand(ucp::MpiRun &mpi, llvm::ArrayRef<const char *> arguments);

#endif // UCP_TOOLS_AFFINE_RUN_CHECKCOMMAND_H

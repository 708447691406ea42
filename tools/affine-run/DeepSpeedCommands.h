//===- DeepSpeedCommands.h - affine-run's DeepSpeed commands ----*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H
#define UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H

#include "DeepSpeedOptions.h"

/// Whether the command line named a DeepSpeed command.
bool isDeepSpeedCommand();
namespace ucp {
class MpiRun;
}

/// Runs the DeepSpeed command named; returns the exit status. With --mpi,
/// starts `mpi`'s group of a job (its processes given the same
/// `arguments`) and shares the job among its processes.
int runDeepSpeedCommand(ucp::MpiRun &mpi,
                        llvm::ArrayRef<const char *> arguments);

#endif // UCP_TOOLS_AFFINE_RUN_DEEPSPEEDCOMMANDS_H

//===- Signals.h - Signal handlers for the tools ----------------*- C++ -*-===//
//
// LLVM's signal handlers print a stack trace on a crash and remove the
// unfinished outputs (SafetensorsWriter's temporary files) on an interrupt,
// then end the process. Installed as they are, they would also end a run
// that its caller started with the signal ignored: `nohup affine-run ...`
// would die on a hang-up. installSignalHandlers keeps such signals ignored.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_SIGNALS_H
#define UCP_SUPPORT_SIGNALS_H

namespace ucp {

/// Installs LLVM's signal handlers for the tool `argv0`, except for the
/// interrupt signals (hang-up, interrupt, termination, SIGUSR2, broken pipe)
/// the process started with ignored, which stay ignored. Call it first in
/// main, before anything else installs handlers (llvm::InitLLVM does).
void installSignalHandlers(const char *argv0);

} // namespace ucp

#endif // UCP_SUPPORT_SIGNALS_H

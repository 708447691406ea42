//===- Signals.cpp - Signal handlers for the tools ------------------------===//

#include "ucp/Support/Signals.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Signals.h"

#include <csignal>

void ucp::installSignalHandlers(const char *argv0) {
  llvm::SmallVector<int> ignored;
  for (int signal : {SIGHUP, SIGINT, SIGTERM, SIGUSR2, SIGPIPE}) {
    struct sigaction action;
    if (sigaction(signal, nullptr, &action) == 0 &&
        action.sa_handler == SIG_IGN)
      ignored.push_back(signal);
  }
  // Installs the handlers for every signal, once per process.
  llvm::sys::PrintStackTraceOnErrorSignal(argv0);
  for (int signal : ignored)
    std::signal(signal, SIG_IGN);
}

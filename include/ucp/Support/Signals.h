//===- Signals.h - Signal handlers for the tools ----------------*- C++ -*-===//
//
// LLVM's signal handlers print a stack trace on a crash and remove the
// unfinished output files on an interrupt, then end the process by the
// signal (a shell reports 128 + the signal's number). Two things are added
// here:
//
//  * folders: LLVM removes files only, so an output folder being written
//    (OutputFolder's temporary folder, with everything already in it, and
//    the parent folders made for it) is registered here and removed by the
//    handler of the interrupt signals, before LLVM's handler runs;
//  * signals the process started with ignored stay ignored: installed as
//    they are, LLVM's handlers would end a run that its caller started with
//    the signal ignored (`nohup affine-run ...` would die on a hang-up).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_SIGNALS_H
#define UCP_SUPPORT_SIGNALS_H

#include "llvm/ADT/StringRef.h"

namespace ucp {

/// Installs LLVM's signal handlers for the tool `argv0`, and before them on
/// the interrupt signals (hang-up, interrupt, termination, SIGUSR2, broken
/// pipe) the removal of the registered folders; an interrupt signal the
/// process started with ignored stays ignored. Call it first in main,
/// before anything else installs handlers (llvm::InitLLVM does).
void installSignalHandlers(const char *argv0);

/// Has an interrupt signal remove the folder `path`: with everything in it
/// when `withContents`, else only if it is empty. Folders are removed in
/// the order they were registered. Without installSignalHandlers (a
/// library in another program), nothing is removed on a signal.
void removeFolderOnSignal(llvm::StringRef path, bool withContents);

/// Undoes removeFolderOnSignal(`path`, ...): the folder is kept, or gone.
void dontRemoveFolderOnSignal(llvm::StringRef path);

/// Whether an interrupt signal removes `path` anyway, with a folder
/// registered with its contents that holds it (and the handlers are
/// installed): a file there needs no registration of its own.
bool isRemovedOnSignal(llvm::StringRef path);

} // namespace ucp

#endif // UCP_SUPPORT_SIGNALS_H

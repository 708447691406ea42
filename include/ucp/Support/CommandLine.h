//===- CommandLine.h - What every tool's command line does ------*- C++ -*-===//
//
// Rules every affine-ucp tool applies to its command line beyond what
// llvm::cl does: an option that takes one value refuses a second one
// (llvm::cl keeps the last, silently dropping the first), and --version
// names the product before the LLVM it was built with.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_COMMANDLINE_H
#define UCP_SUPPORT_COMMANDLINE_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

namespace ucp {

/// The product's version, as "0.6.0".
llvm::StringRef getProductVersion();

/// Makes --version print "TOOL (affine-ucp VERSION)" and then LLVM's
/// version lines. Call before parsing the command line.
void setVersionPrinter(llvm::StringRef tool);

/// Fails, naming the option and how often it was given, when an option of
/// the subcommand the command line `argv` chose (the top level when none)
/// that takes one value was given more than once, under any of its names.
/// Call after parsing the command line.
llvm::Error checkOptionsGivenOnce(int argc, const char *const *argv);

} // namespace ucp

#endif // UCP_SUPPORT_COMMANDLINE_H

//===- CommandLine.cpp - What every tool's command line does --------------===//

#include "ucp/Support/CommandLine.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Compiler.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace ucp;
namespace cl = llvm::cl;

llvm::StringRef ucp::getProductVersion() { return UCP_VERSION; }

void ucp::setVersionPrinter(llvm::StringRef tool) {
  static std::string name;
  name = tool.str();
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << name << " (affine-ucp " << getProductVersion() << ")\n";
    // LLVM's own lines: its version and build, which the tools link.
    cl::PrintVersionMessage();
  });
}

/// The subcommand the command line chose, or the top level.
static cl::SubCommand &getChosenSubCommand() {
  for (cl::SubCommand *command : cl::getRegisteredSubcommands())
    if (command != &cl::SubCommand::getTopLevel() &&
        command != &cl::SubCommand::getAll() && *command)
      return *command;
  return cl::SubCommand::getTopLevel();
}

// LLVM's and MLIR's own options were built without RTTI (as Debian builds
// them), so UBSan's vptr check cannot tell their dynamic type and would
// report every one; the options are only read here.
LLVM_NO_SANITIZE("vptr") llvm::Error ucp::checkOptionsGivenOnce() {
  // One option may be registered under several names (its aliases count
  // their uses on it too): report each option once, by its own name.
  std::map<std::string, int> repeated;
  for (const auto &entry : cl::getRegisteredOptions(getChosenSubCommand())) {
    cl::Option *option = entry.getValue();
    bool singleValued = option->getNumOccurrencesFlag() == cl::Optional ||
                        option->getNumOccurrencesFlag() == cl::Required;
    if (singleValued && option->getNumOccurrences() > 1 &&
        !option->ArgStr.empty())
      repeated[option->ArgStr.str()] = option->getNumOccurrences();
  }
  if (repeated.empty())
    return llvm::Error::success();
  auto [name, count] = *repeated.begin();
  return makeError(
      "--" + name + " is given " + std::to_string(count) +
      " times; give it once (a second value would silently "
      "replace the first)");
}

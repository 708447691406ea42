//===- CommandLine.cpp - What every tool's command line does --------------===//

#include "ucp/Support/CommandLine.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/SmallPtrSet.h"
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

llvm::Error ucp::checkOptionsGivenOnce(int argc, const char *const *argv) {
  // Only the options the command line names are looked at: libLLVM's own
  // options were built without RTTI (as Debian builds LLVM), and UBSan's
  // vptr check would report any use of them. One option may be named
  // under several names (its aliases count their uses on it too): report
  // each option once, by the name it was registered under.
  llvm::StringMap<cl::Option *> &options =
      cl::getRegisteredOptions(getChosenSubCommand());
  llvm::SmallPtrSet<cl::Option *, 8> named;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--")
      break;
    if (!arg.starts_with("-") || arg.size() < 2)
      continue;
    llvm::StringRef name = arg.ltrim('-').split('=').first;
    if (cl::Option *option = options.lookup(name))
      named.insert(option);
  }
  std::map<std::string, int> repeated;
  for (cl::Option *option : named) {
    bool singleValued =
        option->getNumOccurrencesFlag() == cl::Optional ||
        option->getNumOccurrencesFlag() == cl::Required;
    if (singleValued && option->getNumOccurrences() > 1)
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

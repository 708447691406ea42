//===- CheckpointFolder.cpp - A checkpoint folder and its pointer ---------===//

#include "ucp/Support/CheckpointFolder.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/OutputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

using namespace ucp;
namespace path = llvm::sys::path;

llvm::Expected<llvm::StringRef>
ucp::getCheckpointFolder(llvm::StringRef output, llvm::StringRef pointer) {
  llvm::StringRef folder = output.rtrim('/');
  llvm::StringRef name = path::filename(folder);
  if (folder.empty() || name == "." || name == "..")
    return makeError("--output_folder '" + output + "' names no new folder (" +
                     pointer + " beside it names it)");
  return folder;
}

llvm::Error ucp::writeCheckpointFolder(
    llvm::StringRef folder, llvm::StringRef pointer,
    llvm::function_ref<llvm::Error(llvm::StringRef)> write, bool durable) {
  llvm::Expected<std::unique_ptr<OutputFolder>> staged =
      OutputFolder::create(folder);
  if (!staged)
    return staged.takeError();
  if (llvm::Error error = write((*staged)->getTemporaryPath()))
    return error;
  if (llvm::Error error = (*staged)->commit(durable))
    return error;
  llvm::SmallString<256> file(path::parent_path(folder));
  path::append(file, pointer);
  llvm::Expected<std::unique_ptr<OutputFile>> named = OutputFile::create(file);
  if (!named)
    return named.takeError();
  (*named)->os() << path::filename(folder);
  return (*named)->commit(durable);
}

//===- CheckpointFolder.h - A checkpoint folder and its pointer --*- C++
//-*-===//
//
// DeepSpeed finds a checkpoint folder through a file beside it that names
// it (`latest` for a tag, `latest_universal` for a Universal checkpoint).
// The converters write the folder as one output (OutputFolder: staged,
// renamed into place, its missing parents made) and the pointer after it.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_CHECKPOINTFOLDER_H
#define UCP_SUPPORT_CHECKPOINTFOLDER_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace ucp {

/// Returns `output` without trailing slashes, or refuses one that names no
/// new folder (empty, `.`, `..`) for the pointer file `pointer` to name.
llvm::Expected<llvm::StringRef> getCheckpointFolder(llvm::StringRef output,
                                                    llvm::StringRef pointer);

/// Writes the new folder `folder`: `write` fills the temporary folder it is
/// given; once that is in place (and, with `durable`, on disk), `pointer`
/// beside it is written with `folder`'s name. Nothing is left at `folder`
/// unless `write` succeeds.
llvm::Error
writeCheckpointFolder(llvm::StringRef folder, llvm::StringRef pointer,
                      llvm::function_ref<llvm::Error(llvm::StringRef)> write,
                      bool durable);

} // namespace ucp

#endif // UCP_SUPPORT_CHECKPOINTFOLDER_H

//===- CheckpointFolder.h - A checkpoint folder and its pointer --*- C++
//-*-===//
//
// DeepSpeed finds a checkpoint folder through a file beside it that names
// it (`latest` for a tag, `latest_universal` for a Universal checkpoint).
// The converters write the folder as one output (OutputFolder: staged,
// renamed into place, its missing parents made) and the pointer after it.
// The rules, checked before any work:
//
//  * the output is `PARENT/NAME`: a bare name would put the pointer in the
//    current folder, so it is refused (`./NAME` says that is meant);
//  * the output is not inside the input folder (it would become part of
//    the checkpoint it was made from, which no tool reads afterwards);
//  * the pointer, if it exists, is a regular file (a folder, FIFO, device
//    or link is refused, before anything is renamed into place);
//  * a pointer that names the input folder (an output beside the input's
//    tag) is left as it is: rewriting it would make DeepSpeed resume the
//    copy at the old topology. The caller says so.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_CHECKPOINTFOLDER_H
#define UCP_SUPPORT_CHECKPOINTFOLDER_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <string>

namespace ucp {

/// Returns `output` without trailing slashes, or refuses it by the rules
/// above: it names no new folder (empty, `.`, `..`), it has no parent
/// folder, it lies inside `input` (the folder read; empty: none), or the
/// pointer file `pointer` beside it is not a regular file.
llvm::Expected<llvm::StringRef> getCheckpointFolder(llvm::StringRef output,
                                                    llvm::StringRef pointer,
                                                    llvm::StringRef input);

/// Writes the new folder `folder`: `write` fills the temporary folder it is
/// given; once that is in place (and, with `durable`, on disk), `pointer`
/// beside it is written with `folder`'s name, unless it names `input`.
/// Nothing is left at `folder` unless `write` succeeds. Returns what was
/// done with the pointer, for the user: empty when it was written.
llvm::Expected<std::string>
writeCheckpointFolder(llvm::StringRef folder, llvm::StringRef pointer,
                      llvm::StringRef input,
                      llvm::function_ref<llvm::Error(llvm::StringRef)> write,
                      bool durable);

} // namespace ucp

#endif // UCP_SUPPORT_CHECKPOINTFOLDER_H

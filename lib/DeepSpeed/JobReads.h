//===- JobReads.h - The bytes of its input a job reads ----------*- C++ -*-===//
//
// Internal to the DeepSpeed library. A job whose input is node-local names
// the bytes its outputs will read before it writes them, so that they can
// be brought from the processes holding them (InputSupply): these add each
// kind of read, as the writers make it, to such a list.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DEEPSPEED_JOBREADS_H
#define UCP_LIB_DEEPSPEED_JOBREADS_H

#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Formats/Torch/TorchFile.h"

namespace ucp {

/// Every byte of `file`: a file copied whole.
void addFileRead(const llvm::MemoryBuffer &file, std::vector<FileBytes> &reads);

/// Storage `key` of `source`, where it holds one.
void addStorageRead(const TorchFile &source, llvm::StringRef key,
                    std::vector<FileBytes> &reads);

/// The storages of `source` that a file of `document` copies from it
/// (TorchFileWriter::copyStoragesFrom).
void addCopiedReads(const TorchFile &source, const PickleDocument &document,
                    std::vector<FileBytes> &reads);

} // namespace ucp

#endif // UCP_LIB_DEEPSPEED_JOBREADS_H

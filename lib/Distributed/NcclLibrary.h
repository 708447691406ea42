//===- NcclLibrary.h - NCCL, loaded at run time -----------------*- C++ -*-===//
//
// The NCCL entry points the NCCL transport uses, with NCCL's own types
// (NcclTypes.h), resolved when first needed: nothing links against NCCL,
// and the tools run where it is missing.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DISTRIBUTED_NCCLLIBRARY_H
#define UCP_LIB_DISTRIBUTED_NCCLLIBRARY_H

#include "NcclTypes.h"

#include "llvm/Support/Error.h"

namespace ucp {

/// NCCL's entry points, as far as point-to-point transfers need.
struct NcclLibrary {
  ncclResult_t (*getVersion)(int *);
  ncclResult_t (*getUniqueId)(ncclUniqueId *);
  ncclResult_t (*commInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*commDestroy)(ncclComm_t);
  ncclResult_t (*commAbort)(ncclComm_t);
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t *);
  ncclResult_t (*groupStart)();
  ncclResult_t (*groupEnd)();
  ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t);
  ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t);
  const char *(*getErrorString)(ncclResult_t);

  /// `what` failed with `result`, in NCCL's words.
  llvm::Error fail(ncclResult_t result, const llvm::Twine &what) const;

  /// Loads libnccl.so.2 (the loader's search path, LD_LIBRARY_PATH first)
  /// and resolves every entry point above, once per process.
  static llvm::Expected<const NcclLibrary &> get();
};

} // namespace ucp

#endif // UCP_LIB_DISTRIBUTED_NCCLLIBRARY_H

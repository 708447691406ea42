//===- NcclTypes.h - The types of NCCL's interface --------------*- C++ -*-===//
//
// The types of NCCL's header that the NCCL transport calls with, under the
// same names and with the same layout, so that a call through
// NcclLibrary's pointers has the function type the library defines (UBSan
// checks it). The stand-in NCCL of the tests defines its functions with
// these types.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_DISTRIBUTED_NCCLTYPES_H
#define UCP_LIB_DISTRIBUTED_NCCLTYPES_H

#include <cstddef>

extern "C" {
/// As in nccl.h: a result, a communicator, the id that joins one, a
/// datatype, and CUDA's stream.
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;
typedef struct ncclComm *ncclComm_t;
#define UCP_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[UCP_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef enum { ncclUint8 = 1 } ncclDataType_t;
typedef struct CUstream_st *cudaStream_t;
}

#endif // UCP_LIB_DISTRIBUTED_NCCLTYPES_H

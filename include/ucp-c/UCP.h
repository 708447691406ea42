/*===- ucp-c/UCP.h - C API of the ucp dialect ---------------------*- C -*-===*\
|*                                                                            *|
|* The ucp dialect and its passes from C, in MLIR's C API convention: a       *|
|* dialect handle to register and load it in a context, the passes and the    *|
|* reshard pipeline registered by name, and a constructor per pass for pass   *|
|* managers built by hand.                                                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef UCP_C_UCP_H
#define UCP_C_UCP_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/// mlirGetDialectHandle__ucp__(): the ucp dialect's handle.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(UCP, ucp);

/// Registers the ucp passes and ucp-reshard-pipeline in the global pass
/// registry, so that mlirParsePassPipeline finds them by name, and the
/// readers of map files (--ucp-compose target=FILE).
MLIR_CAPI_EXPORTED void mlirRegisterUCPPasses(void);

/// --ucp-verify: checks every parameter map (P1, P5, tiling).
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPVerifyPass(void);

/// --ucp-canonicalize: rewrites every parameter map into canonical form.
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPCanonicalizePass(void);

/// --ucp-lower-copies: lowers transfer plans to executable form.
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPLowerCopiesPass(void);

#ifdef __cplusplus
}
#endif

#endif // UCP_C_UCP_H

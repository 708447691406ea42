/*===- ucp-c/UCP.h - C API of the ucp dialect ---------------------*- C -*-===*\
|*                                                                            *|
|* The ucp dialect and its passes from C, in MLIR's C API convention: a       *|
|* dialect handle to register and load it in a context, the passes and the    *|
|* reshard pipeline registered by name, a constructor per pass for pass       *|
|* managers built by hand, and the layout attribute. libUCPCAPI.so holds it   *|
|* with MLIR's own C API (IR, passes, diagnostics, func), so that a C         *|
|* program links that one library.                                            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef UCP_C_UCP_H
#define UCP_C_UCP_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/// mlirGetDialectHandle__ucp__(): the ucp dialect's handle.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(UCP, ucp);

/// Inserts the ucp dialect and every dialect the ucp passes read or produce
/// (func, arith, tensor, memref, scf and MLIR's mesh) into `registry`, as
/// affine-opt registers them.
MLIR_CAPI_EXPORTED void mlirRegisterUCPDialects(MlirDialectRegistry registry);

/// Registers the ucp passes and ucp-reshard-pipeline in the global pass
/// registry, so that mlirParsePassPipeline finds them by name (with their
/// options: `ucp-compose{target=... policy=...}`), and the readers of map
/// files (--ucp-compose target=FILE).
MLIR_CAPI_EXPORTED void mlirRegisterUCPPasses(void);

//===----------------------------------------------------------------------===//
// The passes, each with its options' defaults
//===----------------------------------------------------------------------===//

/// --ucp-verify: checks every parameter map (P1, P5, tiling) and the params
/// every ucp.layout names.
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPVerifyPass(void);

/// --ucp-canonicalize: rewrites every parameter map into canonical form.
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPCanonicalizePass(void);

/// --ucp-compose: replaces every parameter map by its transfer plan into
/// the target map read from `targetPath` (a .json map document or a .mlir
/// file), replica policy `local`.
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPComposePass(MlirStringRef targetPath);

/// --ucp-extract: replaces every parameter map by the plan that extracts
/// its shards from the full tensor.
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPExtractPass(void);

/// --ucp-lower-copies: lowers transfer plans to executable form (scale
/// power 1).
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPLowerCopiesPass(void);

/// --ucp-import-mesh: the ucp map of every tensor MLIR's mesh dialect
/// shards, and a ucp.layout naming it.
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPImportMeshPass(void);

/// --ucp-plans-to-memref: transfer plans as functions of memref copies
/// (element type f32).
MLIR_CAPI_EXPORTED MlirPass mlirCreateUCPPlansToMemrefPass(void);

//===----------------------------------------------------------------------===//
// The layout attribute
//===----------------------------------------------------------------------===//

/// The name of the discardable attribute that carries a layout
/// ("ucp.layout").
MLIR_CAPI_EXPORTED MlirStringRef mlirUCPLayoutAttrGetName(void);

/// Whether `attr` is a #ucp.layout.
MLIR_CAPI_EXPORTED bool mlirAttributeIsAUCPLayout(MlirAttribute attr);

/// #ucp.layout<@param> in `context`.
MLIR_CAPI_EXPORTED MlirAttribute mlirUCPLayoutAttrGet(MlirContext context,
                                                      MlirStringRef param);

/// The symbol name of the parameter `attr`, a #ucp.layout, names.
MLIR_CAPI_EXPORTED MlirStringRef mlirUCPLayoutAttrGetParam(MlirAttribute attr);

#ifdef __cplusplus
}
#endif

#endif // UCP_C_UCP_H

//===- UCPAttrs.h - ucp dialect attributes ----------------------*- C++ -*-===//

#ifndef UCP_DIALECT_UCP_IR_UCPATTRS_H
#define UCP_DIALECT_UCP_IR_UCPATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"

#define GET_ATTRDEF_CLASSES
#include "ucp/Dialect/UCP/IR/UCPAttrs.h.inc"

namespace ucp {

class ParamOp;

/// The name of the discardable attribute that carries a layout.
inline constexpr llvm::StringLiteral kLayoutAttrName = "ucp.layout";

/// The ucp.param a value is annotated with (`ucp.layout` on its defining op
/// or on its block argument's function), or null.
ParamOp getLayoutParam(mlir::Value value);

} // namespace ucp

#endif // UCP_DIALECT_UCP_IR_UCPATTRS_H

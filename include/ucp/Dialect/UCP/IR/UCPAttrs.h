//===- UCPAttrs.h - ucp dialect attributes ----------------------*- C++ -*-===//

#ifndef UCP_DIALECT_UCP_IR_UCPATTRS_H
#define UCP_DIALECT_UCP_IR_UCPATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TensorEncoding.h"

#define GET_ATTRDEF_CLASSES
#include "ucp/Dialect/UCP/IR/UCPAttrs.h.inc"

namespace ucp {

/// The name of the discardable attribute that carries a layout.
inline constexpr llvm::StringLiteral kLayoutAttrName = "ucp.layout";

} // namespace ucp

#endif // UCP_DIALECT_UCP_IR_UCPATTRS_H

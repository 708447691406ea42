//===- UCPDialect.h - ucp dialect declaration -------------------*- C++ -*-===//
//
// The ucp dialect: geometric maps of sharded checkpoint tensors.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_UCPDIALECT_H
#define UCP_DIALECT_UCP_IR_UCPDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ucp/Dialect/UCP/IR/UCPOpsDialect.h.inc"

#endif // UCP_DIALECT_UCP_IR_UCPDIALECT_H

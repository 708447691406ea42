//===- UCPOps.h - ucp dialect operations ------------------------*- C++ -*-===//
//
// Parameter maps, per-rank shards and their pieces.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_UCPOPS_H
#define UCP_DIALECT_UCP_IR_UCPOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

#include "ucp/Dialect/UCP/IR/UCPDialect.h"

namespace ucp {
class ShardOp;
class PieceOp;
class SourceShardOp;
class TargetShardOp;
} // namespace ucp

#define GET_OP_CLASSES
#include "ucp/Dialect/UCP/IR/UCPOps.h.inc"

#endif // UCP_DIALECT_UCP_IR_UCPOPS_H

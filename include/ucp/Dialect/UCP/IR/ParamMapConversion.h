//===- ParamMapConversion.h - ucp ops <-> plain parameter maps --*- C++ -*-===//
//
// One-to-one conversion between `ucp.param` ops and ucp::ParamMap.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_PARAMMAPCONVERSION_H
#define UCP_DIALECT_UCP_IR_PARAMMAPCONVERSION_H

#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Map/ParamMap.h"

#include "mlir/IR/Builders.h"

namespace ucp {

/// Returns the plain form of `piece`.
Piece toPiece(PieceOp piece);

/// Returns the plain form of `param`; shards keep their order in the body.
ParamMap toParamMap(ParamOp param);

/// Supplies the location of each op built from a map: `shard` is -1 for the
/// param op, `piece` is -1 for a shard op.
using MapLocationFn = llvm::function_ref<mlir::Location(int shard, int piece)>;

/// Builds the `ucp.piece` op of `piece` at the builder's insertion point.
PieceOp buildPieceOp(mlir::OpBuilder &builder, mlir::Location loc,
                     const Piece &piece);

/// Builds the `ucp.param` op of `map` at the builder's insertion point. With
/// no `locate`, every op gets `loc`.
ParamOp buildParamOp(mlir::OpBuilder &builder, mlir::Location loc,
                     const ParamMap &map, MapLocationFn locate = nullptr);

} // namespace ucp

#endif // UCP_DIALECT_UCP_IR_PARAMMAPCONVERSION_H

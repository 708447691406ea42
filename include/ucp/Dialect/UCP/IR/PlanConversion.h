//===- PlanConversion.h - ucp plan ops <-> plain plans ----------*- C++ -*-===//

#ifndef UCP_DIALECT_UCP_IR_PLANCONVERSION_H
#define UCP_DIALECT_UCP_IR_PLANCONVERSION_H

#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Plan/TransferPlan.h"

#include "mlir/IR/Builders.h"

namespace ucp {

/// Returns the plain form of `copy`, a copy into the shard of its parent
/// `ucp.target_shard`.
Segment toSegment(CopyOp copy);

/// Returns the plain form of `fill`, in the shard of its parent
/// `ucp.target_shard`.
Fill toFill(FillOp fill);

/// Returns the plain form of `plan`; copies and fills keep their order.
TransferPlan toTransferPlan(PlanOp plan);

/// Builds the `ucp.plan` op of `plan` at the builder's insertion point.
PlanOp buildPlanOp(mlir::OpBuilder &builder, mlir::Location loc,
                   const TransferPlan &plan);

} // namespace ucp

#endif // UCP_DIALECT_UCP_IR_PLANCONVERSION_H

//===- UCPToMemRef.h - Transfer plans as memref code ------------*- C++ -*-===//
//
// Each `ucp.plan` becomes a `func.func` of the same name over flat memrefs,
// one per source shard, then one per target shard, in rank order: each copy
// a pair of `memref.reinterpret_cast` views and a `memref.copy` (a loop
// nest of load, multiply, store where a factor scales it), each fill a loop
// nest of zeros. The pattern runs inside any dialect conversion, partial or
// full; `--ucp-plans-to-memref` is a thin driver over it.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_CONVERSION_UCPTOMEMREF_H
#define UCP_DIALECT_UCP_CONVERSION_UCPTOMEMREF_H

#include "mlir/Transforms/DialectConversion.h"

namespace ucp {

/// Reports, at each plan, every `ucp.plan` under `root` that has no
/// lowering over buffers of `element` (a plan that scales its copies needs
/// a floating-point element), and fails if there was any. The pattern
/// leaves such a plan alone (a match failure, which dialect conversion does
/// not report), so a driver that wants the reason calls this first.
mlir::LogicalResult checkPlansLowerToMemRef(mlir::Operation *root,
                                            mlir::Type element);

/// Adds the pattern that replaces each `ucp.plan` by its function over
/// memrefs of `element`. A pass running it declares the dialects it
/// produces as dependent: `ucp::registerUCPDialects` registers them all.
void populateUCPToMemRefConversionPatterns(mlir::RewritePatternSet &patterns,
                                           mlir::Type element);

/// Makes `ucp.plan` illegal and what the pattern produces (func, memref,
/// scf, arith) legal.
void configureUCPToMemRefConversionTarget(mlir::ConversionTarget &target);

} // namespace ucp

#endif // UCP_DIALECT_UCP_CONVERSION_UCPTOMEMREF_H

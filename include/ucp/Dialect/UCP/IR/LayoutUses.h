//===- LayoutUses.h - Values annotated with a ucp.layout ---------*- C++ -*-===//
//
// A `ucp.layout` is checked in two parts. What the annotation alone tells
// (the annotated value is a statically shaped tensor or memref) is checked
// by the dialect's attribute verifiers, where it is attached. What needs the
// parameter it names (a ucp.param of the nearest symbol table, of the
// value's shape) is a use of a symbol, checked for every annotation of an
// op at once with one SymbolTableCollection, as MLIR checks the uses of a
// symbol table (SymbolUserOpInterface::verifySymbolUses): each table is
// indexed once, so the cost is linear in the annotations, and no op
// verifier looks at another op. --ucp-verify runs it.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_LAYOUTUSES_H
#define UCP_DIALECT_UCP_IR_LAYOUTUSES_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Value.h"

namespace ucp {

class LayoutAttr;
class ParamOp;

/// The `#ucp.layout` a ranked tensor type carries as its encoding, or null.
LayoutAttr getLayoutEncoding(mlir::Type type);

/// The type a `ucp.layout` on `op` annotates: its one result's, or the
/// `type` of a global; null when it has neither.
mlir::Type getAnnotatedType(mlir::Operation *op);

/// The type of argument `argument` of region `region` of `op` (a function's
/// declared argument types, bodiless ones included); null when there is no
/// such argument.
mlir::Type getAnnotatedArgumentType(mlir::Operation *op, unsigned region,
                                    unsigned argument);

/// Checks what `attr`, a `ucp.layout` on `anchor` annotating a value of
/// `type` (named `what` in messages), can tell alone: it is a #ucp.layout
/// and `type` a statically shaped tensor or memref.
mlir::LogicalResult verifyLayoutLocally(mlir::Operation *anchor,
                                        mlir::Attribute attr,
                                        mlir::Type type,
                                        const llvm::Twine &what);

/// Checks every layout on `root` and the ops nested in it, as a
/// discardable `ucp.layout` or as the encoding of a value's tensor type:
/// the symbol names a ucp.param of the nearest symbol table, whose logical
/// shape is the value's, and a value with both names one parameter. Emits an error at each annotation at fault and
/// fails if there was any. Linear in the ops and symbols.
mlir::LogicalResult verifyLayoutUses(mlir::Operation *root,
                                     mlir::SymbolTableCollection &tables);

/// The ucp.param `value` is laid out by (the encoding of its type, else a
/// `ucp.layout` on its defining op or on its block argument's function),
/// or null. Looked up through
/// `tables`, so that looking up many values indexes each table once.
ParamOp getLayoutParam(mlir::Value value, mlir::SymbolTableCollection &tables);

} // namespace ucp

#endif // UCP_DIALECT_UCP_IR_LAYOUTUSES_H

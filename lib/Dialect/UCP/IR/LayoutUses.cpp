//===- LayoutUses.cpp - Values annotated with a ucp.layout ----------------===//

#include "ucp/Dialect/UCP/IR/LayoutUses.h"
#include "ucp/Dialect/UCP/IR/UCPAttrs.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace ucp;

Type ucp::getAnnotatedType(Operation *op) {
  if (op->getNumResults() == 1)
    return op->getResult(0).getType();
  if (auto type = op->getAttrOfType<TypeAttr>("type"))
    return type.getValue();
  return {};
}

Type ucp::getAnnotatedArgumentType(Operation *op, unsigned region,
                                   unsigned argument) {
  if (auto function = dyn_cast<FunctionOpInterface>(op))
    return argument < function.getNumArguments()
               ? function.getArgumentTypes()[argument]
               : Type();
  if (region < op->getNumRegions() && !op->getRegion(region).empty() &&
      argument < op->getRegion(region).getNumArguments())
    return op->getRegion(region).getArgument(argument).getType();
  return {};
}

LogicalResult ucp::verifyLayoutLocally(Operation *anchor, Attribute attr,
                                       Type type, const Twine &what) {
  if (!isa<LayoutAttr>(attr))
    return anchor->emitError() << "'" << kLayoutAttrName
                               << "' must be a #ucp.layout, got " << attr;
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !isa<TensorType, MemRefType>(type) || !shaped.hasRank())
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' on " << what << " of type " << type
           << ": a layout describes a ranked tensor or memref";
  if (!shaped.hasStaticShape())
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' on " << what << " of type " << type
           << ": the layout's shape is static, this type's is not";
  return success();
}

/// Checks `attr`, a `ucp.layout` on `anchor` annotating a value of `type`
/// (named `what`; null when there is no such value), locally and as a use
/// of its symbol.
static LogicalResult verifyLayoutUse(Operation *anchor, Attribute attr,
                                     Type type, const Twine &what,
                                     SymbolTableCollection &tables) {
  if (!type)
    return anchor->emitError() << "'" << kLayoutAttrName
                               << "' annotates a value: an op with one "
                                  "result, a global with a type, or a "
                                  "function argument";
  if (failed(verifyLayoutLocally(anchor, attr, type, what)))
    return failure();
  auto layout = cast<LayoutAttr>(attr);
  auto param = dyn_cast_or_null<ParamOp>(
      tables.lookupNearestSymbolFrom(anchor, layout.getParam()));
  if (!param)
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' names " << layout.getParam()
           << ", which is no ucp.param of the enclosing symbol table";
  if (cast<ShapedType>(type).getShape() != param.getLogicalShape())
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' on " << what << " of type " << type
           << ": parameter '" << param.getSymName() << "' has shape ["
           << param.getLogicalShape() << "]";
  return success();
}

LogicalResult ucp::verifyLayoutUses(Operation *root,
                                    SymbolTableCollection &tables) {
  bool valid = true;
  root->walk([&](Operation *op) {
    if (Attribute attr = op->getAttr(kLayoutAttrName))
      valid &= succeeded(verifyLayoutUse(
          op, attr, getAnnotatedType(op),
          op->getNumResults() == 1 ? "the result" : "the global", tables));
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!function)
      return;
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      if (Attribute attr = function.getArgAttr(i, kLayoutAttrName))
        valid &= succeeded(verifyLayoutUse(op, attr,
                                           function.getArgumentTypes()[i],
                                           "argument #" + Twine(i), tables));
  });
  return success(valid);
}

ParamOp ucp::getLayoutParam(Value value, SymbolTableCollection &tables) {
  LayoutAttr layout;
  Operation *anchor = nullptr;
  if (Operation *op = value.getDefiningOp()) {
    layout = op->getAttrOfType<LayoutAttr>(kLayoutAttrName);
    anchor = op;
  } else if (auto argument = dyn_cast<BlockArgument>(value)) {
    anchor = argument.getOwner()->getParentOp();
    if (auto function = dyn_cast_or_null<FunctionOpInterface>(anchor))
      layout = function.getArgAttrOfType<LayoutAttr>(argument.getArgNumber(),
                                                     kLayoutAttrName);
  }
  if (!layout)
    return nullptr;
  return dyn_cast_or_null<ParamOp>(
      tables.lookupNearestSymbolFrom(anchor, layout.getParam()));
}

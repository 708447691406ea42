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

LayoutAttr ucp::getLayoutEncoding(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor ? dyn_cast_or_null<LayoutAttr>(tensor.getEncoding())
                : LayoutAttr();
}

/// Checks that `layout`, seen from `anchor`, names a ucp.param of the
/// nearest symbol table whose logical shape is that of `type` (the value
/// called `what`).
static LogicalResult verifyLayoutParam(Operation *anchor, LayoutAttr layout,
                                       Type type, const Twine &what,
                                       SymbolTableCollection &tables) {
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

/// Checks `attr`, a discardable `ucp.layout` on `anchor` annotating a value
/// of `type` (named `what`; null when there is no such value), locally, as
/// a use of its symbol and against a layout the type carries.
static LogicalResult verifyLayoutAnnotation(Operation *anchor, Attribute attr,
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
  if (LayoutAttr encoded = getLayoutEncoding(type); encoded && encoded != layout)
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' on " << what << " names "
           << layout.getParam() << " but its type " << type << " names "
           << encoded.getParam();
  return verifyLayoutParam(anchor, layout, type, what, tables);
}

/// Checks the layouts the types of `op`'s results, of its blocks'
/// arguments and, for a function without a body, of its signature carry as
/// their encoding. Each value is checked where it is defined, once.
static LogicalResult verifyLayoutEncodings(Operation *op,
                                           SymbolTableCollection &tables) {
  bool valid = true;
  auto check = [&](Type type, const Twine &what) {
    if (LayoutAttr layout = getLayoutEncoding(type))
      valid &= succeeded(verifyLayoutParam(op, layout, type, what, tables));
  };
  for (OpResult result : op->getResults())
    check(result.getType(), "result #" + Twine(result.getResultNumber()));
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument argument : block.getArguments())
        check(argument.getType(),
              "block argument #" + Twine(argument.getArgNumber()));
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (function && function.isExternal()) {
    for (auto [i, type] : llvm::enumerate(function.getArgumentTypes()))
      check(type, "argument #" + Twine(i));
    for (auto [i, type] : llvm::enumerate(function.getResultTypes()))
      check(type, "function result #" + Twine(i));
  }
  return success(valid);
}

LogicalResult ucp::verifyLayoutUses(Operation *root,
                                    SymbolTableCollection &tables) {
  bool valid = true;
  root->walk([&](Operation *op) {
    valid &= succeeded(verifyLayoutEncodings(op, tables));
    if (Attribute attr = op->getAttr(kLayoutAttrName))
      valid &= succeeded(verifyLayoutAnnotation(
          op, attr, getAnnotatedType(op),
          op->getNumResults() == 1 ? "the result" : "the global", tables));
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!function)
      return;
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      if (Attribute attr = function.getArgAttr(i, kLayoutAttrName))
        valid &= succeeded(verifyLayoutAnnotation(
            op, attr, function.getArgumentTypes()[i], "argument #" + Twine(i),
            tables));
  });
  return success(valid);
}

ParamOp ucp::getLayoutParam(Value value, SymbolTableCollection &tables) {
  LayoutAttr layout = getLayoutEncoding(value.getType());
  Operation *anchor = nullptr;
  if (Operation *op = value.getDefiningOp()) {
    anchor = op;
    if (!layout)
      layout = op->getAttrOfType<LayoutAttr>(kLayoutAttrName);
  } else if (auto argument = dyn_cast<BlockArgument>(value)) {
    anchor = argument.getOwner()->getParentOp();
    auto function = dyn_cast_or_null<FunctionOpInterface>(anchor);
    if (!layout && function)
      layout = function.getArgAttrOfType<LayoutAttr>(argument.getArgNumber(),
                                                     kLayoutAttrName);
  }
  if (!layout || !anchor)
    return nullptr;
  return dyn_cast_or_null<ParamOp>(
      tables.lookupNearestSymbolFrom(anchor, layout.getParam()));
}

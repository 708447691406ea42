//===- UCPDialect.cpp - ucp dialect registration and attributes -----------===//
//
// The dialect, its ops and the layout attribute, whose verifiers check a
// `ucp.layout` where it is attached: the symbol names a ucp.param of the
// nearest symbol table, and the annotated value (an op's one result, a
// global's `type`, a function argument) is a statically shaped tensor or
// memref of the parameter's logical shape.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/IR/UCPAttrs.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ucp;

#include "ucp/Dialect/UCP/IR/UCPOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ucp/Dialect/UCP/IR/UCPAttrs.cpp.inc"

void UCPDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ucp/Dialect/UCP/IR/UCPOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ucp/Dialect/UCP/IR/UCPAttrs.cpp.inc"
      >();
}

/// Checks that `attr`, found on `anchor` as `name`, is a layout whose
/// parameter describes a value of type `type`.
static LogicalResult verifyLayout(Operation *anchor, NamedAttribute attr,
                                  Type type, const Twine &what) {
  auto layout = dyn_cast<LayoutAttr>(attr.getValue());
  if (!layout)
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' must be a #ucp.layout, got "
           << attr.getValue();
  auto param = dyn_cast_or_null<ParamOp>(
      SymbolTable::lookupNearestSymbolFrom(anchor, layout.getParam()));
  if (!param)
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' names " << layout.getParam()
           << ", which is no ucp.param of the enclosing symbol table";
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !isa<TensorType, MemRefType>(type) || !shaped.hasRank())
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' on " << what << " of type " << type
           << ": a layout describes a ranked tensor "
           << "or memref";
  if (!shaped.hasStaticShape())
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' on " << what << " of type " << type
           << ": the layout's shape is static, this type's is not";
  if (shaped.getShape() != param.getLogicalShape())
    return anchor->emitError()
           << "'" << kLayoutAttrName << "' on " << what << " of type " << type
           << ": parameter '" << param.getSymName() << "' has shape ["
           << param.getLogicalShape() << "]";
  return success();
}

LogicalResult UCPDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() != kLayoutAttrName)
    return op->emitError() << "unknown ucp attribute '"
                           << attr.getName().getValue() << "' on an op";
  if (op->getNumResults() == 1)
    return verifyLayout(op, attr, op->getResult(0).getType(), "the result");
  if (auto type = op->getAttrOfType<TypeAttr>("type"))
    return verifyLayout(op, attr, type.getValue(), "the global");
  return op->emitError() << "'" << kLayoutAttrName
                         << "' annotates a value: an op with one result, a "
                            "global with a type, or a function argument";
}

LogicalResult UCPDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned region,
                                                   unsigned argument,
                                                   NamedAttribute attr) {
  if (attr.getName() != kLayoutAttrName)
    return op->emitError() << "unknown ucp attribute '"
                           << attr.getName().getValue() << "' on an argument";
  // A function's argument types, declarations included; else the block's.
  Type type;
  if (auto function = dyn_cast<FunctionOpInterface>(op)) {
    if (argument < function.getNumArguments())
      type = function.getArgumentTypes()[argument];
  } else if (!op->getRegion(region).empty() &&
             argument < op->getRegion(region).getNumArguments()) {
    type = op->getRegion(region).getArgument(argument).getType();
  }
  if (!type)
    return op->emitError() << "'" << kLayoutAttrName << "' on argument #"
                           << argument << ", which the op does not have";
  return verifyLayout(op, attr, type, "argument #" + Twine(argument));
}

ParamOp ucp::getLayoutParam(Value value) {
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
      SymbolTable::lookupNearestSymbolFrom(anchor, layout.getParam()));
}

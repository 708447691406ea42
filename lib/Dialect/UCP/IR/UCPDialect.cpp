//===- UCPDialect.cpp - ucp dialect registration and attributes -----------===//
//
// The dialect, its ops and the layout attribute, whose verifiers check
// what a `ucp.layout` alone can tell where it is attached: that the
// annotated value (an op's one result, a global's `type`, a function
// argument) is a statically shaped tensor or memref. The parameter it names
// is another op, checked with every use of the symbol table at once
// (LayoutUses.cpp). As a tensor encoding, the layout asks only for a
// static shape.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/IR/LayoutUses.h"
#include "ucp/Dialect/UCP/IR/UCPAttrs.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
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

LogicalResult UCPDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() != kLayoutAttrName)
    return op->emitError() << "unknown ucp attribute '"
                           << attr.getName().getValue() << "' on an op";
  Type type = getAnnotatedType(op);
  if (!type)
    return op->emitError() << "'" << kLayoutAttrName
                           << "' annotates a value: an op with one result, a "
                              "global with a type, or a function argument";
  return verifyLayoutLocally(op, attr.getValue(), type,
                             op->getNumResults() == 1 ? "the result"
                                                      : "the global");
}

LogicalResult UCPDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned region,
                                                   unsigned argument,
                                                   NamedAttribute attr) {
  if (attr.getName() != kLayoutAttrName)
    return op->emitError() << "unknown ucp attribute '"
                           << attr.getName().getValue() << "' on an argument";
  Type type = getAnnotatedArgumentType(op, region, argument);
  if (!type)
    return op->emitError() << "'" << kLayoutAttrName << "' on argument #"
                           << argument << ", which the op does not have";
  return verifyLayoutLocally(op, attr.getValue(), type,
                             "argument #" + Twine(argument));
}

LogicalResult LayoutAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type elementType,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (ShapedType::isDynamicShape(shape))
    return emitError() << "a #ucp.layout encoding needs a statically shaped "
                          "tensor: its parameter's logical shape is static";
  return success();
}

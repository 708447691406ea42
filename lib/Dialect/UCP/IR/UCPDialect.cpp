//===- UCPDialect.cpp - ucp dialect registration --------------------------===//

#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"

using namespace ucp;

#include "ucp/Dialect/UCP/IR/UCPOpsDialect.cpp.inc"

void UCPDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ucp/Dialect/UCP/IR/UCPOps.cpp.inc"
      >();
}

//===- UCP.cpp - C API of the ucp dialect ---------------------------------===//

#include "ucp-c/UCP.h"
#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"

#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(UCP, ucp, ucp::UCPDialect)

void mlirRegisterUCPPasses(void) {
  ucp::registerUCPPasses();
  ucp::registerUCPPipelines();
  ucp::registerMapFileReader();
}

MlirPass mlirCreateUCPVerifyPass(void) {
  return wrap(ucp::createUCPVerifyPass().release());
}

MlirPass mlirCreateUCPCanonicalizePass(void) {
  return wrap(ucp::createUCPCanonicalizePass().release());
}

MlirPass mlirCreateUCPLowerCopiesPass(void) {
  return wrap(ucp::createUCPLowerCopiesPass().release());
}

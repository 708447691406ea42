//===- UCP.cpp - C API of the ucp dialect ---------------------------------===//

#include "ucp-c/UCP.h"
#include "ucp/Dialect/UCP/IR/UCPAttrs.h"
#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(UCP, ucp, ucp::UCPDialect)

void mlirRegisterUCPDialects(MlirDialectRegistry registry) {
  ucp::registerUCPDialects(*unwrap(registry));
}

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

MlirPass mlirCreateUCPComposePass(MlirStringRef targetPath) {
  // The pass reads its target through the registered reader.
  ucp::registerMapFileReader();
  ucp::UCPComposePassOptions options;
  options.target = unwrap(targetPath).str();
  return wrap(ucp::createUCPComposePass(options).release());
}

MlirPass mlirCreateUCPExtractPass(void) {
  return wrap(ucp::createUCPExtractPass().release());
}

MlirPass mlirCreateUCPLowerCopiesPass(void) {
  return wrap(ucp::createUCPLowerCopiesPass().release());
}

MlirPass mlirCreateUCPImportMeshPass(void) {
  return wrap(ucp::createUCPImportMeshPass().release());
}

MlirPass mlirCreateUCPPlansToMemrefPass(void) {
  return wrap(ucp::createUCPPlansToMemrefPass().release());
}

MlirStringRef mlirUCPLayoutAttrGetName(void) {
  return wrap(llvm::StringRef(ucp::kLayoutAttrName));
}

bool mlirAttributeIsAUCPLayout(MlirAttribute attr) {
  return llvm::isa<ucp::LayoutAttr>(unwrap(attr));
}

MlirAttribute mlirUCPLayoutAttrGet(MlirContext context, MlirStringRef param) {
  mlir::MLIRContext *ctx = unwrap(context);
  return wrap(ucp::LayoutAttr::get(
      ctx, mlir::FlatSymbolRefAttr::get(ctx, unwrap(param))));
}

MlirStringRef mlirUCPLayoutAttrGetParam(MlirAttribute attr) {
  return wrap(llvm::cast<ucp::LayoutAttr>(unwrap(attr)).getParam().getValue());
}

//===- Registration.cpp - The dialects the ucp passes read and write ------===//

#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

void ucp::registerUCPDialects(mlir::DialectRegistry &registry) {
  using namespace mlir;
  registry.insert<UCPDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect, memref::MemRefDialect,
                  scf::SCFDialect, mesh::MeshDialect>();
  // Calls inline (--inline) only where func's inliner interface is known.
  func::registerInlinerExtension(registry);
}

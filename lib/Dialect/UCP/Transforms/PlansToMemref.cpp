//===- PlansToMemref.cpp - The --ucp-plans-to-memref pass -----------------===//
//
// A driver over the ucp-to-memref conversion pattern: report every plan
// that has no lowering over the chosen element type, then lower every plan
// in one partial conversion.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Conversion/UCPToMemRef.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace ucp {
#define GEN_PASS_DEF_UCPPLANSTOMEMREFPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

/// The MLIR type of elements of `type`, one that element-type offers.
static Type getElementType(DType type, MLIRContext *context) {
  switch (type) {
  case DType::F32:
    return Float32Type::get(context);
  case DType::F64:
    return Float64Type::get(context);
  case DType::F16:
    return Float16Type::get(context);
  case DType::BF16:
    return BFloat16Type::get(context);
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
    return IntegerType::get(context, 8 * getElementSize(type));
  default:
    llvm_unreachable("element-type offers no other type");
  }
}

namespace {
struct UCPPlansToMemrefPass
    : public ucp::impl::UCPPlansToMemrefPassBase<UCPPlansToMemrefPass> {
  using UCPPlansToMemrefPassBase::UCPPlansToMemrefPassBase;

  void runOnOperation() override {
    Type element = getElementType(elementType, &getContext());
    if (failed(checkPlansLowerToMemRef(getOperation(), element)))
      return signalPassFailure();
    ConversionTarget target(getContext());
    configureUCPToMemRefConversionTarget(target);
    RewritePatternSet patterns(&getContext());
    populateUCPToMemRefConversionPatterns(patterns, element);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

//===- UCPToMemRef.cpp - Transfer plans as memref code --------------------===//
//
// The plan's copies are read back as the library's TransferPlan, so the
// lowering sees exactly what the executors run.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Conversion/UCPToMemRef.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <map>

using namespace mlir;
using namespace ucp;

/// Why `plan` has no function over buffers of `element`, or empty.
static std::string getLoweringError(PlanOp plan, Type element) {
  if (isa<FloatType>(element))
    return {};
  for (TargetShardOp target : plan.getTargetShards())
    for (CopyOp copy : target.getBody().front().getOps<CopyOp>())
      if (copy.getScale().convertToDouble() != 1.0) {
        std::string message;
        llvm::raw_string_ostream os(message);
        os << "plan '" << plan.getSymName()
           << "' scales its copies, which a buffer of '" << element
           << "' cannot take";
        return message;
      }
  return {};
}

LogicalResult ucp::checkPlansLowerToMemRef(Operation *root, Type element) {
  bool lowers = true;
  root->walk([&](PlanOp plan) {
    if (std::string error = getLoweringError(plan, element); !error.empty()) {
      plan.emitError(error);
      lowers = false;
    }
  });
  return success(lowers);
}

static int64_t getCount(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

/// `buffer` seen as the strided `view` of `shape`.
static Value getView(OpBuilder &b, Location loc, Value buffer,
                     llvm::ArrayRef<int64_t> shape, const StridedView &view) {
  auto source = cast<MemRefType>(buffer.getType());
  auto layout = StridedLayoutAttr::get(b.getContext(), view.offset,
                                       llvm::ArrayRef<int64_t>(view.strides));
  auto type = MemRefType::get(shape, source.getElementType(), layout);
  return b.create<memref::ReinterpretCastOp>(
      loc, type, buffer, view.offset, shape,
      llvm::ArrayRef<int64_t>(view.strides));
}

/// A loop nest over `shape` calling `body` with the indices.
static void buildLoops(OpBuilder &b, Location loc,
                       llvm::ArrayRef<int64_t> shape,
                       llvm::function_ref<void(OpBuilder &, ValueRange)> body) {
  llvm::SmallVector<Value> lower, upper, steps;
  for (int64_t extent : shape) {
    lower.push_back(b.create<arith::ConstantIndexOp>(loc, 0));
    upper.push_back(b.create<arith::ConstantIndexOp>(loc, extent));
    steps.push_back(b.create<arith::ConstantIndexOp>(loc, 1));
  }
  scf::buildLoopNest(b, loc, lower, upper, steps,
                     [&](OpBuilder &nested, Location, ValueRange indices) {
                       body(nested, indices);
                     });
}

/// Writes the body of `plan`'s function at `b`'s insertion point, `block`
/// holding the shards as arguments.
static void buildPlanBody(OpBuilder &b, Location loc, const TransferPlan &plan,
                          Block *block, const std::map<int64_t, unsigned> &sources,
                          const std::map<int64_t, unsigned> &targets,
                          Type element) {
  for (const Segment &segment : plan.segments) {
    Value from =
        getView(b, loc, block->getArgument(sources.at(segment.sourceRank)),
                segment.shape, segment.source);
    Value to =
        getView(b, loc, block->getArgument(targets.at(segment.targetRank)),
                segment.shape, segment.target);
    if (segment.scale == 1.0) {
      b.create<memref::CopyOp>(loc, from, to);
      continue;
    }
    Value factor = b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(element, segment.scale));
    buildLoops(b, loc, segment.shape, [&](OpBuilder &n, ValueRange at) {
      Value value = n.create<memref::LoadOp>(loc, from, at);
      value = n.create<arith::MulFOp>(loc, value, factor);
      n.create<memref::StoreOp>(loc, value, to, at);
    });
  }
  for (const Fill &fill : plan.fills) {
    Value to = getView(b, loc, block->getArgument(targets.at(fill.rank)),
                       fill.shape, fill.target);
    Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(element));
    buildLoops(b, loc, fill.shape, [&](OpBuilder &n, ValueRange at) {
      n.create<memref::StoreOp>(loc, zero, to, at);
    });
  }
  b.create<func::ReturnOp>(loc);
}

namespace {

/// Replaces one plan by its function.
struct LowerPlanToMemRef : public OpConversionPattern<PlanOp> {
  LowerPlanToMemRef(MLIRContext *context, Type element)
      : OpConversionPattern(context), element(element) {}

  LogicalResult
  matchAndRewrite(PlanOp planOp, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (std::string error = getLoweringError(planOp, element); !error.empty())
      return rewriter.notifyMatchFailure(planOp, error);
    TransferPlan plan = toTransferPlan(planOp);
    Location loc = planOp.getLoc();
    llvm::SmallVector<Type> arguments;
    std::map<int64_t, unsigned> sources, targets;
    for (const auto &[rank, shape] : plan.sourceShards) {
      sources[rank] = arguments.size();
      arguments.push_back(MemRefType::get({getCount(shape)}, element));
    }
    for (const auto &[rank, shape] : plan.targetShards) {
      targets[rank] = arguments.size();
      arguments.push_back(MemRefType::get({getCount(shape)}, element));
    }
    auto function = rewriter.create<func::FuncOp>(
        loc, plan.name, rewriter.getFunctionType(arguments, {}));
    Block *block = rewriter.createBlock(
        &function.getBody(), {}, arguments,
        llvm::SmallVector<Location>(arguments.size(), loc));
    buildPlanBody(rewriter, loc, plan, block, sources, targets, element);
    rewriter.eraseOp(planOp);
    return success();
  }

private:
  Type element;
};

} // namespace

void ucp::populateUCPToMemRefConversionPatterns(RewritePatternSet &patterns,
                                                Type element) {
  patterns.add<LowerPlanToMemRef>(patterns.getContext(), element);
}

void ucp::configureUCPToMemRefConversionTarget(ConversionTarget &target) {
  target.addIllegalOp<PlanOp>();
  target.addLegalDialect<func::FuncDialect, memref::MemRefDialect,
                         scf::SCFDialect, arith::ArithDialect>();
}

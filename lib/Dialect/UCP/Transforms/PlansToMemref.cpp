//===- PlansToMemref.cpp - The --ucp-plans-to-memref pass -----------------===//
//
// Each plan becomes a function over flat memrefs, one per source and
// target shard; each copy a pair of reinterpret_cast views and a
// memref.copy, or a loop nest where a factor scales it; each fill a loop
// nest of zeros. The plan's copies are read back as the library's
// TransferPlan, so the lowering sees exactly what the executors run.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringSwitch.h"

namespace ucp {
#define GEN_PASS_DEF_UCPPLANSTOMEMREFPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {
struct UCPPlansToMemrefPass
    : public ucp::impl::UCPPlansToMemrefPassBase<UCPPlansToMemrefPass> {
  using UCPPlansToMemrefPassBase::UCPPlansToMemrefPassBase;
  void runOnOperation() override;
};
} // namespace

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

/// The function of `plan` over buffers of `element`, or null after
/// reporting why not.
static func::FuncOp lowerPlan(PlanOp planOp, Type element) {
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
  bool scaled = llvm::any_of(plan.segments,
                             [](const Segment &s) { return s.scale != 1.0; });
  if (scaled && !isa<FloatType>(element)) {
    planOp.emitError() << "plan '" << plan.name
                       << "' scales its copies, which a buffer of " << element
                       << " cannot take";
    return nullptr;
  }
  OpBuilder b(planOp);
  auto function =
      b.create<func::FuncOp>(loc, plan.name, b.getFunctionType(arguments, {}));
  Block *body = function.addEntryBlock();
  b.setInsertionPointToStart(body);
  for (const Segment &segment : plan.segments) {
    Value from =
        getView(b, loc, body->getArgument(sources.at(segment.sourceRank)),
                segment.shape, segment.source);
    Value to =
        getView(b, loc, body->getArgument(targets.at(segment.targetRank)),
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
    Value to = getView(b, loc, body->getArgument(targets.at(fill.rank)),
                       fill.shape, fill.target);
    Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(element));
    buildLoops(b, loc, fill.shape, [&](OpBuilder &n, ValueRange at) {
      n.create<memref::StoreOp>(loc, zero, to, at);
    });
  }
  b.create<func::ReturnOp>(loc);
  return function;
}

void UCPPlansToMemrefPass::runOnOperation() {
  Type element = getElementType(elementType, &getContext());
  llvm::SmallVector<PlanOp> plans;
  getOperation().walk([&](PlanOp plan) { plans.push_back(plan); });
  for (PlanOp plan : plans) {
    if (!lowerPlan(plan, element))
      return signalPassFailure();
    plan.erase();
  }
}

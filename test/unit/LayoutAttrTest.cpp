//===- LayoutAttrTest.cpp - ucp.layout on other dialects' values ----------===//

#include "ucp/Dialect/UCP/IR/LayoutUses.h"
#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

constexpr const char *kModule = R"mlir(
ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
func.func @f(%a: tensor<4xf32> {ucp.layout = #ucp.layout<@w>}, %b: tensor<4xf32>,
             %e: tensor<4xf32, #ucp.layout<@w>>) {
  %c = arith.constant {ucp.layout = #ucp.layout<@w>} dense<1.0> : tensor<4xf32>
  %d = arith.constant dense<2.0> : tensor<4xf32>
  %s = arith.addf %e, %e : tensor<4xf32, #ucp.layout<@w>>
  return
}
)mlir";

TEST(LayoutAttr, ValuesFindTheirParameter) {
  MLIRContext context;
  context
      .loadDialect<ucp::UCPDialect, func::FuncDialect, arith::ArithDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &context);
  ASSERT_TRUE(module);
  auto f = module->lookupSymbol<func::FuncOp>("f");
  ASSERT_TRUE(f);
  SymbolTableCollection tables;
  ucp::ParamOp a = ucp::getLayoutParam(f.getArgument(0), tables);
  ASSERT_TRUE(a);
  EXPECT_EQ(a.getSymName(), "w");
  EXPECT_FALSE(ucp::getLayoutParam(f.getArgument(1), tables));
  std::vector<Value> constants;
  f.walk([&](arith::ConstantOp op) { constants.push_back(op.getResult()); });
  ASSERT_EQ(constants.size(), 2u);
  EXPECT_EQ(ucp::getLayoutParam(constants[0], tables), a);
  EXPECT_FALSE(ucp::getLayoutParam(constants[1], tables));
  // A layout the type carries as its encoding, on an argument and a result.
  EXPECT_EQ(ucp::getLayoutParam(f.getArgument(2), tables), a);
  arith::AddFOp sum;
  f.walk([&](arith::AddFOp op) { sum = op; });
  ASSERT_TRUE(sum);
  EXPECT_EQ(ucp::getLayoutParam(sum.getResult(), tables), a);
}

} // namespace

//===- UCPAttrs.td - ucp dialect attributes ----------------*- tablegen -*-===//
//
// The layout attribute: "this value is sharded as that parameter map".
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_UCPATTRS_TD
#define UCP_DIALECT_UCP_IR_UCPATTRS_TD

include "ucp/Dialect/UCP/IR/UCPBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/TensorEncoding.td"

def UCP_LayoutAttr : AttrDef<UCP_Dialect, "Layout", [
    DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "layout";
  let summary = "the ucp.param map a value of another dialect is sharded by";
  let description = [{
    Names the `ucp.param` whose map describes how a value is sharded, the
    way MLIR's mesh dialect annotates tensors with a sharding. Attached as
    the discardable attribute `ucp.layout` to an op with one result (its
    result), to a global with a `type` (its type) or to a function argument
    (`{ucp.layout = ...}` in the signature), the value must be a statically
    shaped tensor or memref (checked by the dialect's attribute verifiers)
    of the parameter's logical shape, and the symbol must name a
    `ucp.param` of the nearest symbol table: uses of symbols, checked by
    `--ucp-verify` for every annotation at once.

    ```mlir
    ucp.param @w shape [4, 2] world 2 { ... }
    func.func @step(%w: tensor<4x2xf32> {ucp.layout = #ucp.layout<@w>}) {
      return
    }
    ```

    The same attribute is also a tensor encoding,
    `tensor<4x2xf32, #ucp.layout<@w>>`: part of the value's type, so that
    every rewrite that keeps types keeps it (`--canonicalize`, `--cse` and
    `--inline` among them), where a discardable attribute is lost whenever
    its op is replaced, folded or inlined. The encoding is checked the same
    way: a static shape where the tensor type is built, the parameter and
    its shape by `--ucp-verify`.

    ```mlir
    func.func @step(%w: tensor<4x2xf32, #ucp.layout<@w>>)
        -> tensor<4x2xf32, #ucp.layout<@w>> {
      %0 = arith.addf %w, %w : tensor<4x2xf32, #ucp.layout<@w>>
      return %0 : tensor<4x2xf32, #ucp.layout<@w>>
    }
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$param);
  let assemblyFormat = "`<` $param `>`";
}

#endif // UCP_DIALECT_UCP_IR_UCPATTRS_TD

//===- UCPBase.td - ucp dialect definition -----------------*- tablegen -*-===//
//
// The ucp dialect describes how each tensor of a model is laid out across the
// ranks of a parallel group, as lists of affine pieces of the full tensor.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_UCPBASE_TD
#define UCP_DIALECT_UCP_IR_UCPBASE_TD

include "mlir/IR/OpBase.td"

def UCP_Dialect : Dialect {
  let name = "ucp";
  let cppNamespace = "::ucp";
  let summary = "Geometric maps of sharded checkpoint tensors";
  let description = [{
    The `ucp` dialect states, for every parameter of a model, which elements
    of the full logical tensor `F` each rank's shard holds and where. It
    replaces name-based layout categories with geometry: a shard is a list of
    *pieces*, each a pair of `torch.as_strided` views (one into `F`, one into
    the shard), the set of ranks holding identical data for the block, and the
    factor the shard holds it by.

    A module holds one `ucp.param` per parameter; a parameter holds one
    `ucp.shard` per rank that holds anything; a shard holds its `ucp.piece`s.

    ```mlir
    ucp.param @"attn.c_attn.weight" shape [48, 8] world 4 {
      ucp.shard rank 0 shape [24, 8] {
        ucp.piece [8, 8] src 0 [8, 1] dst 0 [8, 1] on [0]
        ucp.piece [16, 8] src 256 [8, 1] dst 64 [8, 1] on [0, 1, 2, 3]
      }
      ...
    }
    ```

    Properties P1 (coverage) and P5 (homogeneity) and the tiling of every
    shard are whole-map facts and are checked by `--ucp-verify`; everything a
    single op can check is checked by its verifier.

    Values of other dialects say how they are sharded with the discardable
    attribute `ucp.layout = #ucp.layout<@param>` on an op's result, a
    global's type or a function argument.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Attribute constraints: the invariants a single attribute states
//===----------------------------------------------------------------------===//

// Declared here so that the generated docs state them and no verifier
// repeats them. Range checks that relate two attributes (a rank inside its
// param's world, a view inside its buffer) stay in the op verifiers.

/// A count of ranks: at least 1.
def UCP_WorldSizeAttr : ConfinedAttr<I64Attr, [IntPositive]>;
/// A rank, an element offset or a row count: at least 0.
def UCP_IndexAttr : ConfinedAttr<I64Attr, [IntNonNegative]>;
/// Extents or strides in elements (a stride of 0 repeats an element).
def UCP_ExtentsAttr : ConfinedAttr<DenseI64ArrayAttr,
    [DenseArrayNonNegative<DenseI64ArrayAttr>]>;
/// The ranks holding one block: non-negative, strictly increasing.
def UCP_RankSetAttr : ConfinedAttr<DenseI64ArrayAttr,
    [DenseArrayNonNegative<DenseI64ArrayAttr>,
     DenseArrayStrictlySorted<DenseI64ArrayAttr>]>;

class UCP_Op<string mnemonic, list<Trait> traits = []>
    : Op<UCP_Dialect, mnemonic, traits>;

#endif // UCP_DIALECT_UCP_IR_UCPBASE_TD

//===- UCPOps.td - ucp dialect operations ------------------*- tablegen -*-===//
//
// Parameter maps, per-rank shards and their pieces.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_UCPOPS_TD
#define UCP_DIALECT_UCP_IR_UCPOPS_TD

include "ucp/Dialect/UCP/IR/UCPBase.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

def UCP_ParamOp : UCP_Op<"param", [
    Symbol, SingleBlock, NoTerminator, IsolatedFromAbove
  ]> {
  let summary = "the map of one parameter over a parallel group";
  let description = [{
    Declares a parameter named by its symbol, its logical (full) shape `F`
    and the size of the group its shards are spread over. The body holds one
    `ucp.shard` per rank that holds any of it; a rank with no shard holds
    nothing. Ranks are unique and lie in `[0, world)`.

    A vocabulary padded for an even split (legacy TP) keeps its padding rows
    in `F` (spec §8.1 option a); `vocab N` records how many leading rows of
    dimension 0 are real, so that conversion can truncate afterwards and
    resharding can leave the padding out.

    ```mlir
    ucp.param @"model.norm.weight" shape [4096] world 8 {
      ucp.shard rank 0 shape [4096] {
        ucp.piece [4096] src 0 [1] dst 0 [1] on [0, 1, 2, 3, 4, 5, 6, 7]
      }
      ...
    }
    ```
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    DenseI64ArrayAttr:$logical_shape,
    I64Attr:$world_size,
    OptionalAttr<I64Attr>:$original_vocab_size
  );
  let regions = (region SizedRegion<1>:$body);

  let assemblyFormat = [{
    $sym_name `shape` $logical_shape `world` $world_size
    (`vocab` $original_vocab_size^)? attr-dict-with-keyword $body
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    /// The shards of this parameter, in the order they appear.
    auto getShards() { return getBody().front().getOps<ShardOp>(); }
    /// The number of elements of the logical tensor F.
    int64_t getNumElements();
  }];
}

//===----------------------------------------------------------------------===//
// ShardOp
//===----------------------------------------------------------------------===//

def UCP_ShardOp : UCP_Op<"shard", [
    HasParent<"ParamOp">, SingleBlock, NoTerminator
  ]> {
  let summary = "what one rank holds of a parameter";
  let description = [{
    The shard of rank `rank`: a row-major tensor of shape `shard_shape`
    (normalised to start at its first element), filled by the pieces in its
    body. An empty shard (some extent zero) with no pieces is legal.

    ```mlir
    ucp.shard rank 3 shape [2, 8] {
      ucp.piece [2, 8] src 64 [8, 1] dst 0 [8, 1] on [3]
    }
    ```
  }];

  let arguments = (ins
    I64Attr:$rank,
    DenseI64ArrayAttr:$shard_shape
  );
  let regions = (region SizedRegion<1>:$body);

  let assemblyFormat = [{
    `rank` $rank `shape` $shard_shape attr-dict-with-keyword $body
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// The pieces filling this shard, in order.
    auto getPieces() { return getBody().front().getOps<PieceOp>(); }
    /// The parameter this shard belongs to.
    ParamOp getParam();
    /// The number of elements of the shard.
    int64_t getNumElements();
  }];
}

//===----------------------------------------------------------------------===//
// PieceOp
//===----------------------------------------------------------------------===//

def UCP_PieceOp : UCP_Op<"piece", [HasParent<"ShardOp">]> {
  let summary = "a block of F held by a shard";
  let description = [{
    A block of `shape` elements that sits in `F` at the strided view
    `src offset [strides]` and in the enclosing shard at the strided view
    `dst offset [strides]`. Both are `torch.as_strided` argument lists, in
    elements, so the piece is directly executable in either direction.

    `on` lists the ranks holding identical data for this block (sorted,
    unique, within the world, and including the rank whose shard lists the
    piece). `scale` (default 1) says the shard holds `full * scale`; it must
    be finite and non-zero, because the language admits invertible maps only.

    ```mlir
    // Rank 1 of a column split of F = [8, 32] at world 2.
    ucp.piece [8, 16] src 16 [32, 1] dst 0 [16, 1] on [1]
    // A row-parallel bias pre-divided by the world size.
    ucp.piece [4096] src 0 [1] dst 0 [1] on [0, 1, 2, 3] scale 2.500000e-01
    ```
  }];

  let arguments = (ins
    DenseI64ArrayAttr:$shape,
    I64Attr:$src_offset,
    DenseI64ArrayAttr:$src_strides,
    I64Attr:$dst_offset,
    DenseI64ArrayAttr:$dst_strides,
    DenseI64ArrayAttr:$locations,
    DefaultValuedAttr<F64Attr, "1.0">:$scale
  );

  let assemblyFormat = [{
    $shape `src` $src_offset $src_strides `dst` $dst_offset $dst_strides
    `on` $locations (`scale` $scale^)? attr-dict
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// The shard listing this piece.
    ShardOp getShard();
  }];
}

#endif // UCP_DIALECT_UCP_IR_UCPOPS_TD

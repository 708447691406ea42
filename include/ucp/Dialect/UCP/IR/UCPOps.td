//===- UCPOps.td - ucp dialect operations ------------------*- tablegen -*-===//
//
// Parameter maps, per-rank shards and their pieces.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_UCPOPS_TD
#define UCP_DIALECT_UCP_IR_UCPOPS_TD

include "ucp/Dialect/UCP/IR/UCPBase.td"
include "ucp/Dialect/UCP/IR/UCPAttrs.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

def UCP_ParamOp : UCP_Op<"param", [
    Symbol, SingleBlock, NoTerminator, NoRegionArguments, IsolatedFromAbove
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
    UCP_ExtentsAttr:$logical_shape,
    UCP_WorldSizeAttr:$world_size,
    OptionalAttr<UCP_IndexAttr>:$original_vocab_size
  );
  let regions = (region SizedRegion<1>:$body);

  let assemblyFormat = [{
    $sym_name `shape` $logical_shape `world` $world_size
    (`vocab` $original_vocab_size^)? attr-dict-with-keyword $body
  }];

  let hasVerifier = 1;
  let hasCanonicalizer = 1;
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
    HasParent<"ParamOp">, SingleBlock, NoTerminator, NoRegionArguments
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
    UCP_IndexAttr:$rank,
    UCP_ExtentsAttr:$shard_shape
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
    UCP_ExtentsAttr:$shape,
    UCP_IndexAttr:$src_offset,
    UCP_ExtentsAttr:$src_strides,
    UCP_IndexAttr:$dst_offset,
    UCP_ExtentsAttr:$dst_strides,
    UCP_RankSetAttr:$locations,
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

//===----------------------------------------------------------------------===//
// Transfer plans
//===----------------------------------------------------------------------===//

def UCP_PlanOp : UCP_Op<"plan", [
    Symbol, SingleBlock, NoTerminator, NoRegionArguments, IsolatedFromAbove]> {
  let summary = "how to fill one parameter's target shards from its source shards";
  let description = [{
    The transfer plan of one parameter, M_t o M_s^-1 (spec §2.3): the shard
    shapes on both sides, then, per target rank, the copies and fills that
    write every element of its shard exactly once. F appears nowhere: every
    offset and stride is into a shard.

    ```mlir
    ucp.plan @"c_attn.weight" source_world 2 target_world 4 {
      ucp.source_shard rank 0 shape [32, 8]
      ucp.source_shard rank 1 shape [32, 8]
      ucp.target_shard rank 1 shape [24, 8] {
        ucp.copy [24, 8] from 0 at 64 [8, 1] to 0 [8, 1]
      }
      ...
    }
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    UCP_WorldSizeAttr:$source_world,
    UCP_WorldSizeAttr:$target_world
  );
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `source_world` $source_world `target_world` $target_world
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The declared source shards.
    auto getSourceShards() { return getBody().front().getOps<SourceShardOp>(); }
    /// The target shards and their writes.
    auto getTargetShards() { return getBody().front().getOps<TargetShardOp>(); }
  }];
}

def UCP_SourceShardOp : UCP_Op<"source_shard", [HasParent<"PlanOp">]> {
  let summary = "the shape of a source rank's shard";
  let description = [{
    Declares that source rank `rank` holds a shard of `shape` (row-major,
    starting at its first element), which copies may read.
  }];
  let arguments = (ins UCP_IndexAttr:$rank, UCP_ExtentsAttr:$shard_shape);
  let assemblyFormat = "`rank` $rank `shape` $shard_shape attr-dict";
  let hasVerifier = 1;
}

def UCP_TargetShardOp : UCP_Op<"target_shard", [
    HasParent<"PlanOp">, SingleBlock, NoTerminator, NoRegionArguments]> {
  let summary = "the writes that fill one target rank's shard";
  let description = [{
    Target rank `rank`'s shard of `shape` and the `ucp.copy` and `ucp.fill`
    ops that write it. Together they write every element exactly once (the
    plan's region verifier checks it for all its target shards at once).
  }];
  let arguments = (ins UCP_IndexAttr:$rank, UCP_ExtentsAttr:$shard_shape);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `rank` $rank `shape` $shard_shape attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def UCP_CopyOp : UCP_Op<"copy", [HasParent<"TargetShardOp">]> {
  let summary = "a strided copy from a source shard";
  let description = [{
    `target[to view] = source_shard(from)[at view] * scale`: a block of
    `shape` elements read from source rank `from` at the strided view
    `at OFFSET [STRIDES]` and written into the enclosing target shard at
    `to OFFSET [STRIDES]`. `scale` (default 1) is s_target / s_source.

    ```mlir
    ucp.copy [16, 4] from 1 at 0 [4, 1] to 4 [8, 1]
    ```
  }];
  let arguments = (ins
    UCP_ExtentsAttr:$shape,
    UCP_IndexAttr:$source_rank,
    UCP_IndexAttr:$src_offset,
    UCP_ExtentsAttr:$src_strides,
    UCP_IndexAttr:$dst_offset,
    UCP_ExtentsAttr:$dst_strides,
    DefaultValuedAttr<F64Attr, "1.0">:$scale
  );
  let assemblyFormat = [{
    $shape `from` $source_rank `at` $src_offset $src_strides
    `to` $dst_offset $dst_strides (`scale` $scale^)? attr-dict
  }];
  // Checked by the plan's region verifier, which knows every source shard:
  // a copy looking its source up would cost the plan's ranks per copy.
}

def UCP_FillOp : UCP_Op<"fill", [HasParent<"TargetShardOp">]> {
  let summary = "target elements no source holds";
  let description = [{
    A block of the enclosing target shard that no source holds (padding
    rows of a vocabulary); the executor initialises it.

    ```mlir
    ucp.fill [3, 8] at 104 [8, 1]
    ```
  }];
  let arguments = (ins
    UCP_ExtentsAttr:$shape,
    UCP_IndexAttr:$dst_offset,
    UCP_ExtentsAttr:$dst_strides
  );
  let assemblyFormat = "$shape `at` $dst_offset $dst_strides attr-dict";
  let hasVerifier = 1;
}

#endif // UCP_DIALECT_UCP_IR_UCPOPS_TD

//===- Passes.td - ucp dialect passes ----------------------*- tablegen -*-===//

#ifndef UCP_DIALECT_UCP_TRANSFORMS_PASSES_TD
#define UCP_DIALECT_UCP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def UCPVerifyPass : Pass<"ucp-verify"> {
  let summary = "Check coverage (P1), homogeneity (P5) and shard tiling of every parameter map, and the params layouts name";
  let description = [{
    Runs the whole-map analyses of `ucp/Analysis/MapVerifier.h` on every
    `ucp.param` nested anywhere in the op it runs on (a module, a nested
    module, or a param itself), in order:

    * **P1 coverage**: every element of F is held by some piece;
    * **P5 homogeneity**: pieces sharing an element of F declare the same
      `locations` and the same `scale`, and those locations are exactly the
      ranks whose pieces hold the element;
    * **shard tiling**: every element of every shard is written by exactly
      one piece.

    First it checks every `ucp.layout` in the op: the symbol names a
    `ucp.param` of the nearest symbol table, of the annotated value's
    shape (uses of symbols, which no op verifier looks up; each symbol
    table is indexed once, so the cost is linear in the annotations).

    The cost depends on the number of pieces, never on the number of
    elements: pieces are decomposed into boxes of F (or of the shard) and the
    boxes are swept. On the first parameter with violations the pass reports
    all of that parameter's violations, each naming the parameter, the rank,
    the piece, the first offending element as a multi-index and how many
    elements are affected, and fails.

    The op verifiers have already checked every local invariant (bounds,
    locations, scale) when this pass runs. The result is the
    `MapVerification` analysis of each param, computed for all params in
    parallel on the context's thread pool, which this pass preserves and
    `--ucp-compose` and `--ucp-lower-copies` require: run first on the
    module, it is computed once for all three. (Nested on `ucp.param` it
    verifies too, but MLIR drops the analyses of nested pipelines when they
    end, so the passes after it compute them again.) Example (rank 1 holds one of its two rows):

    ```mlir
    ucp.param @w shape [4, 2] world 2 {
      ucp.shard rank 0 shape [2, 2] {
        ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
      }
      ucp.shard rank 1 shape [2, 2] {
        ucp.piece [1, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
      }
    }
    // fails with
    // error: parameter 'w': 2 elements of F are held by no piece (P1);
    //   the first is [3, 0]
    // error: parameter 'w': rank 1: 2 elements of the shard are written by
    //   no piece; the first is [1, 0]
    ```
  }];
}

def UCPCanonicalizePass : Pass<"ucp-canonicalize"> {
  let summary = "Rewrite every parameter map into canonical form";
  let description = [{
    Rewrites the pieces of every shard of every `ucp.param` nested anywhere
    in the op it runs on into the canonical form of
    `docs/Canonicalization.md`, without changing which element of F goes
    where in any shard:

    * pieces whose source is not a box of F (flattened, permuted, padded
      with extent-1 dimensions, strided) are split into boxes;
    * boxes are folded maximally in N dimensions, grouped so that blocks
      that stack in F fold even when apart in shard order, and never across
      a change of `locations` or `scale`;
    * every source has F's rank and row-major strides; a dimension of extent
      1 gets the dest stride it would have if contiguous with the one inside
      it; pieces are ordered by dest offset; empty pieces are dropped;
    * shards are ordered by rank.

    Only what is not canonical changes: a param already canonical is left
    as it is, attributes and locations included, and so is every shard
    whose pieces are. The pass is idempotent. It is the greedy driver over
    `ucp.param`'s canonicalization patterns (shard order, empty pieces,
    each shard's canonical pieces), applied to the params alone; MLIR's
    `--canonicalize` applies the same patterns. Example (rank 0 of a column split written row by
    row):

    ```mlir
    ucp.shard rank 0 shape [2, 2] {
      ucp.piece [2] src 0 [1] dst 0 [1] on [0]
      ucp.piece [2] src 4 [1] dst 2 [1] on [0]
    }
    // becomes
    ucp.shard rank 0 shape [2, 2] {
      ucp.piece [2, 2] src 0 [4, 1] dst 0 [2, 1] on [0]
    }
    ```
  }];
}

def UCPComposePass : Pass<"ucp-compose", "::mlir::ModuleOp"> {
  let summary = "Compose the source maps with target maps into transfer plans";
  let description = [{
    Replaces every `ucp.param` nested anywhere in the module it runs on (the
    source map, M_s) by the `ucp.plan` that fills the shards of the same
    parameter in the target map (M_t, read once, when the pass is
    initialized, from `target`: a `.json` map document or a `.mlir` file):
    M_t o M_s^-1, computed from the pieces alone, without building F
    (docs/Composition.md). Both maps must hold the same parameters, each
    once; their world sizes may differ.

    Both maps must verify (P1, P5, shard tiling; the `MapVerification`
    analysis of `--ucp-verify`): a hole in the source would otherwise become
    a fill of zeros in place of real data. Their violations are reported as
    `--ucp-verify` reports them, and the pass fails.

    `policy` picks one of several ranks holding the same data (the IR states
    the fact, the planner decides): `lowest`; `local` (the target rank
    itself if it holds the data, else the lowest; the default);
    `node` (local, else a rank on the same node of `ranks-per-node` ranks,
    else the lowest); `balance` (the holder that has sent the fewest
    elements so far). All are deterministic.

    A padded vocabulary (`vocab N` on either side) is composed over its real
    rows only: source padding is never read, target padding becomes
    `ucp.fill`. A scale on either side becomes the copy's factor
    s_target / s_source. Example (rows split two ways into columns split
    two ways):

    ```mlir
    // the source map, in the module the pass runs on
    ucp.param @w shape [4, 2] world 2 {
      ucp.shard rank 0 shape [2, 2] {
        ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
      }
      ucp.shard rank 1 shape [2, 2] {
        ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
      }
    }
    // the target map, in the file `target` names
    ucp.param @w shape [4, 2] world 2 {
      ucp.shard rank 0 shape [4, 1] {
        ucp.piece [4, 1] src 0 [2, 1] dst 0 [1, 1] on [0]
      }
      ucp.shard rank 1 shape [4, 1] {
        ucp.piece [4, 1] src 1 [2, 1] dst 0 [1, 1] on [1]
      }
    }
    // the source map becomes
    ucp.plan @w source_world 2 target_world 2 {
      ucp.source_shard rank 0 shape [2, 2]
      ucp.source_shard rank 1 shape [2, 2]
      ucp.target_shard rank 0 shape [4, 1] {
        ucp.copy [2] from 0 at 0 [2] to 0 [1]
        ucp.copy [2] from 1 at 0 [2] to 2 [1]
      }
      ucp.target_shard rank 1 shape [4, 1] {
        ucp.copy [2] from 0 at 1 [2] to 0 [1]
        ucp.copy [2] from 1 at 1 [2] to 2 [1]
      }
    }
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "the target map (.json map document or .mlir file)">,
    Option<"policy", "policy", "::ucp::ReplicaPolicy::Kind",
           /*default=*/"::ucp::ReplicaPolicy::Local",
           "which of several holders of the same data a copy reads",
           "::ucp::getReplicaPolicyValues()">,
    Option<"ranksPerNode", "ranks-per-node", "::ucp::RanksPerNode",
           /*default=*/"8", "ranks per node (at least 1), for policy=node">,
  ];
}

def UCPExtractPass : Pass<"ucp-extract", "::mlir::ModuleOp"> {
  let summary = "Replace every map by the plan that extracts its shards from the full tensor";
  let description = [{
    Replaces every `ucp.param` nested anywhere in the module it runs on by
    the `ucp.plan` that fills its shards from the full tensor F, held whole
    by source rank 0 of a world of 1: the composition of the map with the
    one-rank map of F, planned as every reshard is. The map must verify, as
    for `--ucp-compose` (its `MapVerification` analysis, reused when
    `--ucp-verify` ran first); a scale on the map becomes the copies'
    factor. `--ucp-lower-copies` then makes the plans executable; the two
    are separate so that a pipeline can schedule them apart (compose some
    params, extract others, lower all at once).

    ```mlir
    ucp.param @w shape [4, 2] world 2 {
      ucp.shard rank 0 shape [2, 2] {
        ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
      }
      ucp.shard rank 1 shape [2, 2] {
        ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
      }
    }
    // becomes
    ucp.plan @w source_world 1 target_world 2 {
      ucp.source_shard rank 0 shape [4, 2]
      ucp.target_shard rank 0 shape [2, 2] {
        ucp.copy [4] from 0 at 0 [1] to 0 [1]
      }
      ucp.target_shard rank 1 shape [2, 2] {
        ucp.copy [4] from 0 at 4 [1] to 0 [1]
      }
    }
    ```
  }];
}

def UCPLowerCopiesPass : Pass<"ucp-lower-copies", "::mlir::ModuleOp"> {
  let summary = "Lower transfer plans to executable copy programs";
  let description = [{
    Rewrites every `ucp.plan` nested anywhere in the module it runs on into
    the copy program executors run (docs/Execution.md), still written as a
    plan: each copy's dimensions are ordered by target stride and merged
    where contiguous on both sides (so the innermost dimension is the
    longest contiguous run), copies of more than 2^20 elements are split
    along their outermost dimension, and every scale is raised to
    `scale-power` (1 for parameters, -1 and -2 for Adam's moments; a
    rescaling plan is refused for a power other than 1, spec §2.1).
    Maps are not plans and are left as they are: `--ucp-extract` first
    makes each the plan of its extraction from the full tensor.

    ```mlir
    ucp.copy [2, 4, 8] from 0 at 0 [32, 8, 1] to 0 [32, 8, 1]
    // becomes
    ucp.copy [64] from 0 at 0 [1] to 0 [1]
    ```
  }];
  let options = [
    Option<"scalePower", "scale-power", "::ucp::ScalePower", /*default=*/"1",
           "the power of the scale the moved tensors carry: 1 (a parameter), "
           "-1 or -2 (Adam's moments), 0 (a tensor that carries none)">,
  ];
}

def UCPImportMeshPass : Pass<"ucp-import-mesh", "::mlir::ModuleOp"> {
  let summary = "Derive the ucp map of every tensor MLIR's mesh dialect shards";
  let description = [{
    For every `mesh.shard` in the module, adds the `ucp.param` of the
    sharding it states over its `mesh.mesh` (one rank per device, numbered
    row-major over the mesh axes, the last fastest) and annotates the shard
    op with `ucp.layout` naming it, so that a pipeline that shards with
    MLIR's own dialect gets exact maps, their verification and transfer
    plans. A tensor dimension split along mesh axes `[x, y]` is cut into
    `size(x) * size(y)` equal blocks, `x` the outer; devices that differ only
    on the axes no dimension is split along hold the same block (its
    locations). The param is named after the function, with the first index
    no symbol has (`@step_shard0`), and placed in the symbol table nearest
    the shard, before the function holding it.

    ```mlir
    mesh.mesh @mesh0(shape = 2x2)
    func.func @step(%w: tensor<4x6xf32>) -> tensor<4x6xf32> {
      %0 = mesh.shard %w to <@mesh0, [[0]]> : tensor<4x6xf32>
      return %0 : tensor<4x6xf32>
    }
    // gains
    ucp.param @step_shard0 shape [4, 6] world 4 {
      ucp.shard rank 0 shape [2, 6] {
        ucp.piece [2, 6] src 0 [6, 1] dst 0 [6, 1] on [0, 1]
      }
      ...
    }
    // and %0 = mesh.shard ... {ucp.layout = #ucp.layout<@step_shard0>}
    ```

    Refused, at the op: partial tensors (`partial = sum[...]`: each device
    holds a summand, not a view of F), dynamic tensor or mesh shapes, mesh
    axes out of range or used twice, and a dimension that does not split
    evenly (the mesh dialect's own requirement).

    The pass is a driver over `ucp::populateMeshToUCPConversionPatterns`
    (`ucp/Dialect/UCP/Conversion/MeshToUCP.h`): every refusal reported, then
    one partial conversion in which a `mesh.shard` is legal once it has a
    layout. Another project runs the same pattern in its own conversion.
  }];
  let dependentDialects = ["::ucp::UCPDialect"];
}

def UCPPlansToMemrefPass : Pass<"ucp-plans-to-memref", "::mlir::ModuleOp"> {
  let summary = "Lower transfer plans to functions of memref copies";
  let description = [{
    Replaces every `ucp.plan` by a function of the same name that performs
    it with upstream dialects, so that any MLIR pipeline can compile a
    reshard to LLVM: its arguments are the source shards, then the target
    shards, in rank order, each a flat `memref<N x element-type>`; each copy
    becomes `memref.reinterpret_cast` views of both shards and a
    `memref.copy` (or, with a factor, an `scf.for` nest that loads,
    multiplies and stores), each fill an `scf.for` nest storing zeros. The
    hand-tuned executors stay the fast path; this is the portable one.

    ```mlir
    ucp.plan @w source_world 2 target_world 1 {
      ucp.source_shard rank 0 shape [2, 2]
      ucp.source_shard rank 1 shape [2, 2]
      ucp.target_shard rank 0 shape [4, 2] {
        ucp.copy [4] from 0 at 0 [1] to 0 [1]
        ucp.copy [4] from 1 at 0 [1] to 4 [1]
      }
    }
    // becomes
    func.func @w(%src0: memref<4xf32>, %src1: memref<4xf32>,
                 %dst0: memref<8xf32>) {
      %0 = memref.reinterpret_cast %src0 to offset: [0], sizes: [4],
          strides: [1] : memref<4xf32> to memref<4xf32, strided<[1]>>
      %1 = memref.reinterpret_cast %dst0 to offset: [0], sizes: [4],
          strides: [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
      memref.copy %0, %1 : ...
      ...
    }
    ```

    A factor other than 1 needs a floating-point `element-type`.

    The pass is a driver over `ucp::populateUCPToMemRefConversionPatterns`
    (`ucp/Dialect/UCP/Conversion/UCPToMemRef.h`): every plan that cannot
    be lowered reported, then one partial conversion in which `ucp.plan` is
    illegal. Another project runs the same pattern in its own conversion.
  }];
  let options = [
    Option<"elementType", "element-type", "::ucp::DType",
           /*default=*/"::ucp::DType::F32", "the shards' element type",
           "::ucp::getMemrefElementTypeValues()">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // UCP_DIALECT_UCP_TRANSFORMS_PASSES_TD

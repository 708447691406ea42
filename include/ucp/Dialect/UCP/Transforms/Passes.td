//===- Passes.td - ucp dialect passes ----------------------*- tablegen -*-===//

#ifndef UCP_DIALECT_UCP_TRANSFORMS_PASSES_TD
#define UCP_DIALECT_UCP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def UCPVerifyPass : Pass<"ucp-verify", "mlir::ModuleOp"> {
  let summary = "Check coverage (P1), homogeneity (P5) and shard tiling of every parameter map";
  let description = [{
    Runs the whole-map analyses of `ucp/Analysis/MapVerifier.h` on every
    `ucp.param` of the module, in order:

    * **P1 coverage**: every element of F is held by some piece;
    * **P5 homogeneity**: pieces sharing an element of F declare the same
      `locations` and the same `scale`, and those locations are exactly the
      ranks whose pieces hold the element;
    * **shard tiling**: every element of every shard is written by exactly
      one piece.

    The cost depends on the number of pieces, never on the number of
    elements: pieces are decomposed into boxes of F (or of the shard) and the
    boxes are swept. On the first parameter with violations the pass reports
    all of that parameter's violations, each naming the parameter, the rank,
    the piece, the first offending element as a multi-index and how many
    elements are affected, and fails.

    The op verifiers have already checked every local invariant (bounds,
    locations, scale) when this pass runs.
  }];
}

#endif // UCP_DIALECT_UCP_TRANSFORMS_PASSES_TD

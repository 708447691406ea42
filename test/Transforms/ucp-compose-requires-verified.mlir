// RUN: rm -rf %t && split-file %s %t
// Compose and extract require verified maps: a hole in the source would
// otherwise become a fill of zeros in place of real data. Each refusal
// reports the violation as --ucp-verify does, and nothing is written.
// RUN: not affine-opt %t/hole.mlir --ucp-compose=target=%t/full.mlir -o %t/plan.mlir 2>&1 | FileCheck %s --check-prefix=HOLE
// HOLE: hole.mlir:1:1: error: parameter 'w': 2 elements of F are held by no piece (P1); the first is [2]
// RUN: not test -e %t/plan.mlir
// RUN: not affine-opt %t/full.mlir --ucp-compose=target=%t/hole.mlir 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: hole.mlir:1:1: error: parameter 'w': 2 elements of F are held by no piece (P1); the first is [2]
// RUN: not affine-opt %t/disagree.mlir --ucp-compose=target=%t/full.mlir 2>&1 | FileCheck %s --check-prefix=P5
// P5: error: parameter 'w': rank 0 piece #0 (locations [0]) and rank 1 piece #0 (locations [1]) share 4 elements of F but declare different locations (P5)
// RUN: not affine-opt %t/hole.mlir --ucp-extract 2>&1 | FileCheck %s --check-prefix=LOWER
// LOWER: hole.mlir:1:1: error: parameter 'w': 2 elements of F are held by no piece (P1)
// The named pipeline affine-run runs refuses it the same way.
// RUN: not affine-opt %t/hole.mlir --ucp-reshard-pipeline=target=%t/full.mlir 2>&1 | FileCheck %s --check-prefix=HOLE
// A param inside a nested module is reached too.
// RUN: not affine-opt %t/nested.mlir --ucp-compose=target=%t/full.mlir 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: nested.mlir:3:5: error: parameter 'w': 2 elements of F are held by no piece (P1)
// Valid maps compose, in nested modules too, and the pipeline lowers them.
// RUN: affine-opt %t/full.mlir --ucp-reshard-pipeline=target=%t/full.mlir | FileCheck %s --check-prefix=GOOD
// GOOD: ucp.copy [4] from 0 at 0 [1] to 0 [1]
// RUN: affine-opt %t/nested-full.mlir --ucp-compose=target=%t/full.mlir | FileCheck %s --check-prefix=NESTED-GOOD
// NESTED-GOOD:      module {
// NESTED-GOOD-NEXT:   module {
// NESTED-GOOD-NEXT:     ucp.plan @w source_world 1 target_world 1 {

//--- full.mlir
ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
//--- hole.mlir
ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [2] {
    ucp.piece [2] src 0 [1] dst 0 [1] on [0]
  }
}
//--- disagree.mlir
ucp.param @w shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
  ucp.shard rank 1 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [1]
  }
}
//--- nested.mlir
module {
  module {
    ucp.param @w shape [4] world 1 {
      ucp.shard rank 0 shape [2] {
        ucp.piece [2] src 0 [1] dst 0 [1] on [0]
      }
    }
  }
}
//--- nested-full.mlir
module {
  module {
    ucp.param @w shape [4] world 1 {
      ucp.shard rank 0 shape [4] {
        ucp.piece [4] src 0 [1] dst 0 [1] on [0]
      }
    }
  }
}

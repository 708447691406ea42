// RUN: affine-opt %s -split-input-file --canonicalize | FileCheck %s
// RUN: affine-opt %s -split-input-file --ucp-canonicalize | FileCheck %s --check-prefix=PASS

// MLIR's --canonicalize applies ucp.param's patterns: an empty piece is
// dropped and the rest folded into canonical form.
// CHECK-LABEL: ucp.param @empty_piece
// CHECK-NEXT: ucp.shard rank 0 shape [4] {
// CHECK-NEXT: ucp.piece [4] src 0 [1] dst 0 [1] on [0]
// CHECK-NEXT: }
ucp.param @empty_piece shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [2] src 0 [1] dst 0 [1] on [0]
    ucp.piece [0, 3] src 0 [3, 1] dst 0 [3, 1] on [0]
    ucp.piece [2] src 2 [1] dst 2 [1] on [0]
  }
}

// -----

// --ucp-canonicalize rewrites ucp.params only: another dialect's dead
// constant, which --canonicalize erases, stays.
// CHECK-LABEL: func.func @other
// CHECK-NOT: arith.constant
// PASS-LABEL: func.func @other
// PASS-NEXT: arith.constant
func.func @other() {
  %unused = arith.constant 1 : i32
  return
}

// RUN: affine-opt %s -split-input-file --ucp-canonicalize --mlir-print-debuginfo | FileCheck %s
// RUN: affine-opt %s -split-input-file --canonicalize --mlir-print-debuginfo | FileCheck %s

// A param already canonical is left as it is: its attributes, and the
// locations of every op.
// CHECK-LABEL: ucp.param @canonical
// CHECK-SAME:    attributes {note = "kept"}
// CHECK:         ucp.shard rank 0 shape [2, 4] attributes {tag = 0 : i64} {
// CHECK-NEXT:      ucp.piece [2, 4] src 0 [4, 1] dst 0 [4, 1] on [0] {why = "kept"} loc(#[[PIECE:.*]])
// CHECK-NEXT:    } loc(#[[SHARD:.*]])
// CHECK:       } loc(#[[PARAM:.*]])
// CHECK-DAG:   #[[PARAM]] = loc("param.mlir":1:1)
// CHECK-DAG:   #[[SHARD]] = loc("shard.mlir":2:2)
// CHECK-DAG:   #[[PIECE]] = loc("piece.mlir":3:3)
ucp.param @canonical shape [2, 4] world 1 attributes {note = "kept"} {
  ucp.shard rank 0 shape [2, 4] attributes {tag = 0 : i64} {
    ucp.piece [2, 4] src 0 [4, 1] dst 0 [4, 1] on [0] {why = "kept"} loc("piece.mlir":3:3)
  } loc("shard.mlir":2:2)
} loc("param.mlir":1:1)

// -----

// Shards are put in ascending rank order, keeping their attributes; only
// the shard whose pieces are not canonical gets new pieces (at its own
// location), and the param keeps its attributes.
// CHECK-LABEL: ucp.param @shards_out_of_order
// CHECK-SAME:    attributes {note = "kept"}
// CHECK:         ucp.shard rank 0 shape [2] attributes {tag = 0 : i64} {
// CHECK-NEXT:      ucp.piece [2] src 0 [1] dst 0 [1] on [0] loc(#[[SHARD0:.*]])
// CHECK-NEXT:    } loc(#[[SHARD0]])
// CHECK-NEXT:    ucp.shard rank 1 shape [2] attributes {tag = 1 : i64} {
// CHECK-NEXT:      ucp.piece [2] src 2 [1] dst 0 [1] on [1] {why = "kept"} loc(#[[PIECE1:.*]])
// CHECK-NEXT:    } loc(#[[SHARD1:.*]])
// CHECK-DAG:   #[[SHARD0]] = loc("shard0.mlir":5:5)
// CHECK-DAG:   #[[SHARD1]] = loc("shard1.mlir":4:4)
// CHECK-DAG:   #[[PIECE1]] = loc("piece1.mlir":6:6)
ucp.param @shards_out_of_order shape [4] world 2 attributes {note = "kept"} {
  ucp.shard rank 1 shape [2] attributes {tag = 1 : i64} {
    ucp.piece [2] src 2 [1] dst 0 [1] on [1] {why = "kept"} loc("piece1.mlir":6:6)
  } loc("shard1.mlir":4:4)
  ucp.shard rank 0 shape [2] attributes {tag = 0 : i64} {
    ucp.piece [1] src 0 [1] dst 0 [1] on [0]
    ucp.piece [1] src 1 [1] dst 1 [1] on [0]
  } loc("shard0.mlir":5:5)
}

// RUN: affine-opt %s | affine-opt | FileCheck %s

// CHECK-LABEL: ucp.plan @embed source_world 4 target_world 2 {
// CHECK-NEXT:    ucp.source_shard rank 0 shape [4, 2]
// CHECK:         ucp.target_shard rank 1 shape [7, 2] {
// CHECK-NEXT:      ucp.copy [2] from 1 at 6 [1] to 0 [1]{{$}}
// CHECK-NEXT:      ucp.copy [8] from 2 at 0 [1] to 2 [1] scale 5.000000e-01{{$}}
// CHECK-NEXT:      ucp.copy [2] from 3 at 0 [1] to 10 [1]{{$}}
// CHECK-NEXT:      ucp.fill [2] at 12 [1]{{$}}
ucp.plan @embed source_world 4 target_world 2 {
  ucp.source_shard rank 0 shape [4, 2]
  ucp.source_shard rank 1 shape [4, 2]
  ucp.source_shard rank 2 shape [4, 2]
  ucp.source_shard rank 3 shape [4, 2]
  ucp.target_shard rank 0 shape [7, 2] {
    ucp.copy [8] from 0 at 0 [1] to 0 [1]
    ucp.copy [6] from 1 at 0 [1] to 8 [1]
  }
  ucp.target_shard rank 1 shape [7, 2] {
    ucp.copy [2] from 1 at 6 [1] to 0 [1]
    ucp.copy [8] from 2 at 0 [1] to 2 [1] scale 0.5
    ucp.copy [2] from 3 at 0 [1] to 10 [1] scale 1.0
    ucp.fill [2] at 12 [1]
  }
}

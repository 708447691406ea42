// RUN: affine-opt %s -split-input-file --ucp-canonicalize --ucp-verify | FileCheck %s
// RUN: affine-opt %s -split-input-file --ucp-canonicalize | affine-opt -split-input-file --ucp-canonicalize | FileCheck %s
// RUN: affine-opt %s -split-input-file --canonicalize --ucp-verify | FileCheck %s

// Rows written one by one fold into one box per rank, even when the rows
// are listed out of shard order.
// CHECK-LABEL: ucp.param @column_split_by_rows
// CHECK:         ucp.shard rank 0 shape [2, 2] {
// CHECK-NEXT:      ucp.piece [2, 2] src 0 [4, 1] dst 0 [2, 1] on [0]
// CHECK-NEXT:    }
// CHECK:         ucp.shard rank 1 shape [4] {
// CHECK-NEXT:      ucp.piece [2, 2] src 2 [4, 1] dst 0 [2, 1] on [1]
// CHECK-NEXT:    }
ucp.param @column_split_by_rows shape [2, 4] world 2 {
  ucp.shard rank 0 shape [2, 2] {
    ucp.piece [2] src 4 [1] dst 2 [1] on [0]
    ucp.piece [2] src 0 [1] dst 0 [1] on [0]
  }
  ucp.shard rank 1 shape [4] {
    ucp.piece [2, 2] src 2 [4, 1] dst 0 [2, 1] on [1]
    ucp.piece [0, 2] src 8 [4, 1] dst 4 [2, 1] on [1]
  }
}

// -----

// A flat piece over whole rows becomes a box of F's rank; a flat piece that
// starts and ends mid-row splits into head, middle and tail.
// CHECK-LABEL: ucp.param @flat
// CHECK:         ucp.shard rank 0 shape [14] {
// CHECK-NEXT:      ucp.piece [3, 4] src 0 [4, 1] dst 0 [4, 1] on [0]
// CHECK-NEXT:      ucp.piece [1, 2] src 12 [4, 1] dst 12 [2, 1] on [0]
// CHECK-NEXT:    }
// CHECK:         ucp.shard rank 1 shape [6] {
// CHECK-NEXT:      ucp.piece [1, 2] src 14 [4, 1] dst 0 [2, 1] on [1]
// CHECK-NEXT:      ucp.piece [1, 4] src 16 [4, 1] dst 2 [4, 1] on [1]
// CHECK-NEXT:    }
ucp.param @flat shape [5, 4] world 2 {
  ucp.shard rank 0 shape [14] {
    ucp.piece [14] src 0 [1] dst 0 [1] on [0]
  }
  ucp.shard rank 1 shape [6] {
    ucp.piece [6] src 14 [1] dst 0 [1] on [1]
  }
}

// -----

// Merges stop where the holders change (bigcode's last rank: its q rows
// end where the replicated kv block begins), and where the scale changes.
// CHECK-LABEL: ucp.param @replication_boundary
// CHECK:         ucp.shard rank 1 shape [4, 2] {
// CHECK-NEXT:      ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
// CHECK-NEXT:      ucp.piece [2, 2] src 8 [2, 1] dst 4 [2, 1] on [0, 1]
// CHECK-NEXT:    }
ucp.param @replication_boundary shape [6, 2] world 2 {
  ucp.shard rank 0 shape [4, 2] {
    ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
    ucp.piece [1, 2] src 8 [2, 1] dst 4 [2, 1] on [0, 1]
    ucp.piece [1, 2] src 10 [2, 1] dst 6 [2, 1] on [0, 1]
  }
  ucp.shard rank 1 shape [4, 2] {
    ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
    ucp.piece [2, 2] src 8 [2, 1] dst 4 [2, 1] on [0, 1]
  }
}

// -----

// CHECK-LABEL: ucp.param @scale_boundary
// CHECK:         ucp.piece [2] src 0 [1] dst 0 [1] on [0]
// CHECK-NEXT:    ucp.piece [2] src 2 [1] dst 2 [1] on [0] scale 5.000000e-01
ucp.param @scale_boundary shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [2] src 2 [1] dst 2 [1] on [0] scale 0.5
    ucp.piece [2] src 0 [1] dst 0 [1] on [0]
  }
}

// -----

// A transposed copy (columns of F as rows of the shard) is one piece.
// CHECK-LABEL: ucp.param @transposed
// CHECK:         ucp.piece [3, 2] src 0 [2, 1] dst 0 [1, 3] on [0]
ucp.param @transposed shape [3, 2] world 1 {
  ucp.shard rank 0 shape [2, 3] {
    ucp.piece [2, 3] src 0 [1, 2] dst 0 [3, 1] on [0]
  }
}

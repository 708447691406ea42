// RUN: affine-opt %s | affine-opt | FileCheck %s
// RUN: affine-opt %s --mlir-print-op-generic | affine-opt | FileCheck %s

// CHECK-LABEL: ucp.param @row_split shape [10, 8] world 4 {
// CHECK-NEXT:    ucp.shard rank 0 shape [3, 8] {
// CHECK-NEXT:      ucp.piece [3, 8] src 0 [8, 1] dst 0 [8, 1] on [0]{{$}}
// CHECK-NEXT:    }
// CHECK:         ucp.shard rank 3 shape [2, 8] {
// CHECK-NEXT:      ucp.piece [2, 8] src 64 [8, 1] dst 0 [8, 1] on [3]
ucp.param @row_split shape [10, 8] world 4 {
  ucp.shard rank 0 shape [3, 8] {
    ucp.piece [3, 8] src 0 [8, 1] dst 0 [8, 1] on [0]
  }
  ucp.shard rank 1 shape [3, 8] {
    ucp.piece [3, 8] src 24 [8, 1] dst 0 [8, 1] on [1]
  }
  ucp.shard rank 2 shape [2, 8] {
    ucp.piece [2, 8] src 48 [8, 1] dst 0 [8, 1] on [2]
  }
  ucp.shard rank 3 shape [2, 8] {
    ucp.piece [2, 8] src 64 [8, 1] dst 0 [8, 1] on [3]
  }
}

// Yuan o_proj: a column selection, strides (32, 1) in F.
// CHECK-LABEL: ucp.param @model.layers.0.self_attn.o_proj.weight shape [8, 32] world 2 {
// CHECK:         ucp.piece [8, 8] src 16 [32, 1] dst 8 [16, 1] on [0]
ucp.param @"model.layers.0.self_attn.o_proj.weight" shape [8, 32] world 2 {
  ucp.shard rank 0 shape [8, 16] {
    ucp.piece [8, 8] src 0 [32, 1] dst 0 [16, 1] on [0]
    ucp.piece [8, 8] src 16 [32, 1] dst 8 [16, 1] on [0]
  }
  ucp.shard rank 1 shape [8, 16] {
    ucp.piece [8, 8] src 8 [32, 1] dst 0 [16, 1] on [1]
    ucp.piece [8, 8] src 24 [32, 1] dst 8 [16, 1] on [1]
  }
}

// A scale other than 1 is printed; scale 1, written or not, is elided (the
// line ends after the locations).
// CHECK-LABEL: ucp.param @unscaled shape [4] world 1 {
// CHECK-NEXT:    ucp.shard rank 0 shape [4] {
// CHECK-NEXT:      ucp.piece [2] src 0 [1] dst 0 [1] on [0]{{$}}
// CHECK-NEXT:      ucp.piece [2] src 2 [1] dst 2 [1] on [0]{{$}}
ucp.param @unscaled shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [2] src 0 [1] dst 0 [1] on [0] scale 1.0
    ucp.piece [2] src 2 [1] dst 2 [1] on [0]
  }
}

// CHECK-LABEL: ucp.param @scaled_bias shape [4] world 2 {
// CHECK:         ucp.piece [4] src 0 [1] dst 0 [1] on [0, 1] scale 5.000000e-01{{$}}
ucp.param @scaled_bias shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0, 1] scale 0.5
  }
  ucp.shard rank 1 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0, 1] scale 0.5
  }
}

// An empty rank and an empty piece are legal; a scalar parameter too.
// CHECK-LABEL: ucp.param @empty_rank shape [2, 4] world 2 {
// CHECK:         ucp.shard rank 1 shape [0, 4] {
// CHECK-NEXT:      ucp.piece [0, 4] src 8 [4, 1] dst 0 [4, 1] on [1]
// CHECK-NEXT:    }
ucp.param @empty_rank shape [2, 4] world 2 {
  ucp.shard rank 0 shape [2, 4] {
    ucp.piece [2, 4] src 0 [4, 1] dst 0 [4, 1] on [0]
  }
  ucp.shard rank 1 shape [0, 4] {
    ucp.piece [0, 4] src 8 [4, 1] dst 0 [4, 1] on [1]
  }
}

// CHECK-LABEL: ucp.param @scalar shape [] world 1 {
// CHECK:         ucp.piece [] src 0 [] dst 0 [] on [0]
ucp.param @scalar shape [] world 1 {
  ucp.shard rank 0 shape [] {
    ucp.piece [] src 0 [] dst 0 [] on [0]
  }
}

// A legacy-padded vocabulary records its real rows.
// CHECK-LABEL: ucp.param @embed shape [16, 2] world 2 vocab 13 {
ucp.param @embed shape [16, 2] world 2 vocab 13 {
  ucp.shard rank 0 shape [8, 2] {
    ucp.piece [8, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
  }
  ucp.shard rank 1 shape [8, 2] {
    ucp.piece [8, 2] src 16 [2, 1] dst 0 [2, 1] on [1]
  }
}

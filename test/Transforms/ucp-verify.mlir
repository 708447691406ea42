// RUN: affine-opt %s -split-input-file --ucp-verify -verify-diagnostics | FileCheck %s

// A clean map passes through unchanged.
// CHECK-LABEL: ucp.param @bigcode
// CHECK-COUNT-8: ucp.piece
ucp.param @bigcode shape [48, 8] world 4 {
  ucp.shard rank 0 shape [24, 8] {
    ucp.piece [8, 8] src 0 [8, 1] dst 0 [8, 1] on [0]
    ucp.piece [16, 8] src 256 [8, 1] dst 64 [8, 1] on [0, 1, 2, 3]
  }
  ucp.shard rank 1 shape [24, 8] {
    ucp.piece [8, 8] src 64 [8, 1] dst 0 [8, 1] on [1]
    ucp.piece [16, 8] src 256 [8, 1] dst 64 [8, 1] on [0, 1, 2, 3]
  }
  ucp.shard rank 2 shape [24, 8] {
    ucp.piece [8, 8] src 128 [8, 1] dst 0 [8, 1] on [2]
    ucp.piece [16, 8] src 256 [8, 1] dst 64 [8, 1] on [0, 1, 2, 3]
  }
  ucp.shard rank 3 shape [24, 8] {
    ucp.piece [8, 8] src 192 [8, 1] dst 0 [8, 1] on [3]
    ucp.piece [16, 8] src 256 [8, 1] dst 64 [8, 1] on [0, 1, 2, 3]
  }
}

// -----

// A flat piece running across rows and a column selection also verify.
// CHECK-LABEL: ucp.param @mixed_views
ucp.param @mixed_views shape [4, 6] world 2 {
  ucp.shard rank 0 shape [15] {
    ucp.piece [15] src 0 [1] dst 0 [1] on [0]
  }
  ucp.shard rank 1 shape [9] {
    ucp.piece [9] src 15 [1] dst 0 [1] on [1]
  }
}

// -----

// P1: row 6 is held by nobody; the shard of rank 1 also has a hole.
// expected-error@+1 {{parameter 'rows': 8 elements of F are held by no piece (P1); the first is [6, 0]}}
ucp.param @rows shape [10, 8] world 2 {
  ucp.shard rank 0 shape [5, 8] {
    ucp.piece [5, 8] src 0 [8, 1] dst 0 [8, 1] on [0]
  }
  // expected-error@+1 {{parameter 'rows': rank 1: 8 elements of the shard are written by no piece; the first is [1, 0]}}
  ucp.shard rank 1 shape [5, 8] {
    ucp.piece [1, 8] src 40 [8, 1] dst 0 [8, 1] on [1]
    ucp.piece [3, 8] src 56 [8, 1] dst 16 [8, 1] on [1]
  }
}

// -----

// P5: two pieces share F elements but declare different locations.
ucp.param @mixed shape [4, 4] world 2 {
  ucp.shard rank 0 shape [3, 4] {
    // expected-error@+1 {{parameter 'mixed': rank 0 piece #0 (locations [0]) and rank 1 piece #0 (locations [1]) share 4 elements of F but declare different locations (P5); the first is [2, 0]}}
    ucp.piece [3, 4] src 0 [4, 1] dst 0 [4, 1] on [0]
  }
  ucp.shard rank 1 shape [2, 4] {
    // expected-note@+1 {{the other piece}}
    ucp.piece [2, 4] src 8 [4, 1] dst 0 [4, 1] on [1]
  }
}

// -----

// P5: a replicated block whose holders disagree on its scale.
ucp.param @bias shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{parameter 'bias': rank 0 piece #0 (scale 0.5) and rank 1 piece #0 (scale 0.25) share 4 elements of F but declare different scales (P5); the first is [0]}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [0, 1] scale 0.5
  }
  ucp.shard rank 1 shape [4] {
    // expected-note@+1 {{the other piece}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [0, 1] scale 0.25
  }
}

// -----

// P5: a piece claims a holder that does not hold it (bigcode merged across
// the replication boundary).
ucp.param @merged shape [8, 2] world 2 {
  ucp.shard rank 0 shape [6, 2] {
    ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
    ucp.piece [4, 2] src 8 [2, 1] dst 4 [2, 1] on [0, 1]
  }
  ucp.shard rank 1 shape [6, 2] {
    // expected-error@+1 {{parameter 'merged': rank 1 piece #0 declares locations [0, 1] but 4 elements of it in F are held by ranks [1] only (P5); the first is [2, 0]}}
    ucp.piece [6, 2] src 4 [2, 1] dst 0 [2, 1] on [0, 1]
  }
}

// -----

// Shard tiling: two pieces write the same shard elements.
ucp.param @overlap shape [4, 2] world 1 {
  ucp.shard rank 0 shape [4, 2] {
    // expected-error@+1 {{parameter 'overlap': rank 0 pieces #0 and #1 both write 2 elements of the shard; the first is [1, 0]}}
    ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
    // expected-note@+1 {{the other piece}}
    ucp.piece [3, 2] src 2 [2, 1] dst 2 [2, 1] on [0]
  }
}

// -----

// Shard tiling: a non-injective dest view writes elements twice.
ucp.param @self_overlap shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{parameter 'self_overlap': rank 0 piece #0 writes 1 element of the shard more than once; the first is [1]}}
    ucp.piece [2, 2] src 0 [2, 1] dst 0 [1, 1] on [0]
    ucp.piece [1] src 0 [1] dst 3 [1] on [0]
  }
}

// -----

// Only the first failing parameter is reported, with all its violations.
// expected-error@+1 {{parameter 'first': 2 elements of F are held by no piece (P1); the first is [2]}}
ucp.param @first shape [4] world 1 {
  // expected-error@+1 {{parameter 'first': rank 0: 2 elements of the shard are written by no piece; the first is [2]}}
  ucp.shard rank 0 shape [4] {
    ucp.piece [2] src 0 [1] dst 0 [1] on [0]
  }
}
ucp.param @second shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
  }
}

// -----

// A param inside a nested module is verified like one at the top.
module {
  module @inner {
    // expected-error@+1 {{parameter 'nested': 2 elements of F are held by no piece (P1); the first is [2]}}
    ucp.param @nested shape [4] world 1 {
      // expected-error@+1 {{parameter 'nested': rank 0: 2 elements of the shard are written by no piece; the first is [2]}}
      ucp.shard rank 0 shape [4] {
        ucp.piece [2] src 0 [1] dst 0 [1] on [0]
      }
    }
  }
}

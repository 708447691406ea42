// RUN: affine-opt %s -split-input-file -verify-diagnostics

// expected-error@+1 {{attribute 'world_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
ucp.param @w shape [4] world 0 {
}

// -----

// expected-error@+1 {{world size 1048577 is beyond the most ranks supported, 1048576}}
ucp.param @w shape [4] world 1048577 {
}

// -----

// expected-error@+1 {{attribute 'logical_shape' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
ucp.param @w shape [2, -4] world 1 {
}

// -----

// expected-error@+1 {{logical shape [4294967296, 4294967296] has more elements than int64 can count}}
ucp.param @w shape [4294967296, 4294967296] world 1 {
}

// -----

ucp.param @w shape [4] world 2 {
  // expected-error@+1 {{rank 2 is outside the world [0, 2)}}
  ucp.shard rank 2 shape [4] {
  }
}

// -----

ucp.param @w shape [4] world 2 {
  // expected-error@+1 {{attribute 'shard_shape' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
  ucp.shard rank 0 shape [-1] {
  }
}

// -----

ucp.param @w shape [4] world 2 {
  // expected-error@+1 {{shard shape [4294967296, 4294967296] has more elements than int64 can count}}
  ucp.shard rank 0 shape [4294967296, 4294967296] {
  }
}

// -----

ucp.param @w shape [4] world 2 {
  // expected-note@+1 {{first shard of the rank here}}
  ucp.shard rank 1 shape [4] {
  }
  // expected-error@+1 {{rank 1 has more than one shard}}
  ucp.shard rank 1 shape [4] {
  }
}

// -----

ucp.param @w shape [4] world 1 {
  // expected-error@+1 {{'ucp.piece' op expects parent op 'ucp.shard'}}
  ucp.piece [4] src 0 [1] dst 0 [1] on [0]
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{source strides [1, 1] have 2 entries but the shape [4] has 1}}
    ucp.piece [4] src 0 [1, 1] dst 0 [1] on [0]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{dest strides [] have 0 entries but the shape [4] has 1}}
    ucp.piece [4] src 0 [1] dst 0 [] on [0]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'shape' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
    ucp.piece [-4] src 0 [1] dst 0 [1] on [0]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'src_strides' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
    ucp.piece [4] src 3 [-1] dst 0 [1] on [0]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'dst_strides' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
    ucp.piece [4] src 0 [1] dst 3 [-1] on [0]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'src_offset' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    ucp.piece [1] src -1 [1] dst 0 [1] on [0]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'dst_offset' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    ucp.piece [1] src 0 [1] dst -1 [1] on [0]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{op shape [4294967296, 4294967296] has more elements than int64 can count}}
    ucp.piece [4294967296, 4294967296] src 0 [0, 0] dst 0 [0, 0] on [0]
  }
}

// -----

ucp.param @w shape [8, 4] world 1 {
  ucp.shard rank 0 shape [32] {
    // expected-error@+1 {{source view element [7, 3] lands at offset 35 of F, which has 32 elements}}
    ucp.piece [8, 4] src 4 [4, 1] dst 0 [4, 1] on [0]
  }
}

// -----

ucp.param @w shape [8, 4] world 1 {
  ucp.shard rank 0 shape [8, 4] {
    // expected-error@+1 {{dest view element [7, 3] lands at offset 38 of the shard, which has 32 elements}}
    ucp.piece [8, 4] src 0 [4, 1] dst 0 [5, 1] on [0]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{source view overflows int64}}
    ucp.piece [3] src 0 [9223372036854775807] dst 0 [1] on [0]
  }
}

// -----

ucp.param @w shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{locations must name at least the rank 0 that lists the piece}}
    ucp.piece [4] src 0 [1] dst 0 [1] on []
  }
}

// -----

ucp.param @w shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'locations' failed to satisfy constraint: i64 dense array attribute whose value is non-negative should be in increasing order}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [1, 0]
  }
}

// -----

ucp.param @w shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'locations' failed to satisfy constraint: i64 dense array attribute whose value is non-negative should be in increasing order}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [0, 0]
  }
}

// -----

ucp.param @w shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{location 2 is outside the world [0, 2)}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [0, 2]
  }
}

// -----

ucp.param @w shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{locations [1] do not include the rank 0 that lists the piece}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [1]
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{scale must be finite and non-zero, got 0}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [0] scale 0.0
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{scale must be finite and non-zero, got inf}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [0] scale 0x7FF0000000000000
  }
}

// -----

// expected-note@+1 {{see existing symbol definition here}}
ucp.param @w shape [4] world 1 {
}
// expected-error@+1 {{redefinition of symbol named 'w'}}
ucp.param @w shape [4] world 1 {
}

// -----

ucp.param @w shape [4] world 1 {
  // expected-error@+1 {{is not a ucp.shard; a ucp.param holds shards only}}
  builtin.module {
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{is not a ucp.piece; a ucp.shard holds pieces only}}
    builtin.module {
    }
  }
}

// -----

// expected-error@+1 {{original vocabulary size 17 must lie in [0, 16], the rows of F}}
ucp.param @w shape [16, 2] world 1 vocab 17 {
}

// -----

// expected-error@+1 {{a scalar parameter has no vocabulary rows}}
ucp.param @w shape [] world 1 vocab 1 {
}

// -----

// Regions take no arguments: a pass would drop them.
// expected-error@+1 {{'ucp.param' op region should have no arguments}}
"ucp.param"() <{logical_shape = array<i64: 4>, sym_name = "w", world_size = 1 : i64}> ({
^bb0(%a: i32):
}) : () -> ()

// -----

ucp.param @w shape [4] world 1 {
  // expected-error@+1 {{'ucp.shard' op region should have no arguments}}
  "ucp.shard"() <{rank = 0 : i64, shard_shape = array<i64: 4>}> ({
  ^bb0(%a: i32):
  }) : () -> ()
}

// -----

// No elements, so the count fits, but the outer stride (2^64) does not.
// expected-error@+1 {{logical shape [0, 4611686018427387904, 4] has row-major strides beyond int64}}
ucp.param @w shape [0, 4611686018427387904, 4] world 1 {
}

// -----

ucp.param @w shape [4] world 1 {
  // expected-error@+1 {{shard shape [0, 4611686018427387904, 4] has row-major strides beyond int64}}
  ucp.shard rank 0 shape [0, 4611686018427387904, 4] {
  }
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{scale must be finite and non-zero, got nan}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [0] scale 0x7FF8000000000000
  }
}

// -----

// The smallest subnormal: finite and non-zero, but 1/scale overflows.
ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{has no finite inverse, so no shard could be rebuilt}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [0] scale 0x0000000000000001
  }
}

// -----

// expected-error@+1 {{attribute 'original_vocab_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
ucp.param @w shape [16, 2] world 1 vocab -1 {
}

// -----

ucp.param @w shape [4] world 2 {
  // expected-error@+1 {{attribute 'rank' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  ucp.shard rank -1 shape [4] {
  }
}

// -----

ucp.param @w shape [4] world 2 {
  ucp.shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'locations' failed to satisfy constraint: i64 dense array attribute whose value is non-negative should be in increasing order}}
    ucp.piece [4] src 0 [1] dst 0 [1] on [-1, 0]
  }
}

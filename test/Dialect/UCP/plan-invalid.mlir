// RUN: affine-opt %s -split-input-file -verify-diagnostics

// expected-error@+1 {{attribute 'source_world' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
ucp.plan @p source_world 0 target_world 1 {
}

// -----

// expected-error@+1 {{target world size 2199023255552 is beyond the most ranks supported, 1048576}}
ucp.plan @p source_world 1 target_world 2199023255552 {
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  // expected-error@+1 {{rank 1 is outside the world [0, 1)}}
  ucp.source_shard rank 1 shape [4]
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  // expected-note@+1 {{first declared here}}
  ucp.source_shard rank 0 shape [4]
  // expected-error@+1 {{rank 0 is declared twice}}
  ucp.source_shard rank 0 shape [4]
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{reads from source rank 1, which declares no shard}}
    ucp.copy [4] from 1 at 0 [1] to 0 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{source view element [3] lands at offset 5 of the source shard, which has 4 elements}}
    ucp.copy [4] from 0 at 2 [1] to 0 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{target view element [3] lands at offset 4 of the target shard, which has 4 elements}}
    ucp.copy [4] from 0 at 0 [1] to 1 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{scale must be finite and non-zero, got 0}}
    ucp.copy [4] from 0 at 0 [1] to 0 [1] scale 0.0
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{target view element [1] lands at offset 4 of the target shard, which has 4 elements}}
    ucp.fill [2] at 3 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-note@+1 {{the other write of the element}}
    ucp.copy [3] from 0 at 0 [1] to 0 [1]
    // expected-error@+1 {{target rank 0: element [2] of its shard is written by both copy #0 and fill #0}}
    ucp.fill [2] at 2 [1]
  }
}

// -----

// Writes are numbered within their shard, and the error is at the later.
ucp.plan @p source_world 1 target_world 2 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    ucp.copy [4] from 0 at 0 [1] to 0 [1]
  }
  ucp.target_shard rank 1 shape [4] {
    ucp.fill [1] at 3 [1]
    // expected-note@+1 {{the other write of the element}}
    ucp.copy [2] from 0 at 0 [1] to 0 [1]
    // expected-error@+1 {{target rank 1: element [1] of its shard is written by both copy #0 and copy #1}}
    ucp.copy [2] from 0 at 0 [1] to 1 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  // expected-error@+1 {{target rank 0: element [3] of its shard is written by no copy or fill}}
  ucp.target_shard rank 0 shape [4] {
    ucp.copy [3] from 0 at 0 [1] to 0 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  // expected-error@+1 {{is not a shard declaration; a ucp.plan holds ucp.source_shard and ucp.target_shard ops only}}
  builtin.module {
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{is not a ucp.copy or ucp.fill; a ucp.target_shard holds writes only}}
    builtin.module {
    }
  }
}

// -----

// Regions take no arguments: a pass would drop them.
// expected-error@+1 {{'ucp.plan' op region should have no arguments}}
"ucp.plan"() <{source_world = 1 : i64, sym_name = "p", target_world = 1 : i64}> ({
^bb0(%a: i32):
}) : () -> ()

// -----

ucp.plan @p source_world 1 target_world 1 {
  // expected-error@+1 {{'ucp.target_shard' op region should have no arguments}}
  "ucp.target_shard"() <{rank = 0 : i64, shard_shape = array<i64: 0>}> ({
  ^bb0(%a: i32):
  }) : () -> ()
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [0]
  // expected-note@+1 {{first declared here}}
  ucp.target_shard rank 0 shape [0] {
  }
  // expected-error@+1 {{rank 0 is declared twice}}
  ucp.target_shard rank 0 shape [0] {
  }
}

// -----

// Every other element of the target: one box per element, more than the
// tiling check decomposes.
ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [1048577]
  ucp.target_shard rank 0 shape [2097154] {
    // expected-error@+1 {{target rank 0: copy #0 is too irregular to check (its view needs more than 1048576 boxes)}}
    ucp.copy [1048577] from 0 at 0 [1] to 0 [2]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  // expected-error@+1 {{attribute 'rank' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  ucp.target_shard rank -1 shape [4] {
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'source_rank' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    ucp.copy [4] from -1 at 0 [1] to 0 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'dst_strides' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
    ucp.fill [4] at 3 [-1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  // expected-error@+1 {{attribute 'shard_shape' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
  ucp.source_shard rank 0 shape [-4]
}

// -----

// expected-error@+1 {{attribute 'target_world' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
ucp.plan @p source_world 1 target_world 0 {
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  // expected-error@+1 {{attribute 'rank' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  ucp.source_shard rank -1 shape [4]
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  // expected-error@+1 {{attribute 'shard_shape' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
  ucp.target_shard rank 0 shape [-4] {
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'shape' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
    ucp.copy [-4] from 0 at 0 [1] to 0 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'src_offset' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    ucp.copy [4] from 0 at -1 [1] to 0 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'src_strides' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
    ucp.copy [4] from 0 at 3 [-1] to 0 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'dst_offset' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    ucp.copy [4] from 0 at 0 [1] to -1 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'dst_strides' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
    ucp.copy [4] from 0 at 0 [1] to 3 [-1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'shape' failed to satisfy constraint: i64 dense array attribute whose value is non-negative}}
    ucp.fill [-4] at 0 [1]
  }
}

// -----

ucp.plan @p source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    // expected-error@+1 {{attribute 'dst_offset' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    ucp.fill [4] at -1 [1]
  }
}

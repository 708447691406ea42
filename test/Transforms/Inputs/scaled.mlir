ucp.plan @b source_world 1 target_world 1 {
  ucp.source_shard rank 0 shape [4]
  ucp.target_shard rank 0 shape [4] {
    ucp.copy [4] from 0 at 0 [1] to 0 [1] scale 5.000000e-01
  }
}

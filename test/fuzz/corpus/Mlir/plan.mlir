module {
  ucp.plan @weight source_world 2 target_world 4 {
    ucp.source_shard rank 0 shape [4]
    ucp.source_shard rank 1 shape [4]
    ucp.target_shard rank 0 shape [4] {
      ucp.copy [4] from 0 at 0 [1] to 0 [1] scale 5.000000e-01
    }
    ucp.target_shard rank 1 shape [4] {
      ucp.copy [4] from 1 at 0 [1] to 0 [1] scale 5.000000e-01
    }
    ucp.target_shard rank 2 shape [4] {
      ucp.copy [4] from 0 at 0 [1] to 0 [1] scale 5.000000e-01
    }
    ucp.target_shard rank 3 shape [4] {
      ucp.copy [4] from 0 at 0 [1] to 0 [1] scale 5.000000e-01
    }
  }
}


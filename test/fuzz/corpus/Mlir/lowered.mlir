module {
  ucp.plan @weight source_world 2 target_world 4 {
    ucp.source_shard rank 0 shape [8, 2]
    ucp.source_shard rank 1 shape [8, 2]
    ucp.target_shard rank 0 shape [6, 2] {
      ucp.copy [4] from 0 at 0 [1] to 0 [1]
      ucp.copy [8] from 0 at 8 [1] to 4 [1]
    }
    ucp.target_shard rank 1 shape [6, 2] {
      ucp.copy [4] from 0 at 4 [1] to 0 [1]
      ucp.copy [8] from 1 at 8 [1] to 4 [1]
    }
    ucp.target_shard rank 2 shape [6, 2] {
      ucp.copy [8] from 0 at 8 [1] to 4 [1]
      ucp.copy [4] from 1 at 0 [1] to 0 [1]
    }
    ucp.target_shard rank 3 shape [6, 2] {
      ucp.copy [8] from 0 at 8 [1] to 4 [1]
      ucp.copy [4] from 1 at 4 [1] to 0 [1]
    }
  }
}


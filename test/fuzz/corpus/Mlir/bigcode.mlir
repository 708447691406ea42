module {
  ucp.param @weight shape [12, 2] world 2 {
    ucp.shard rank 0 shape [8, 2] {
      ucp.piece [4, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
      ucp.piece [4, 2] src 16 [2, 1] dst 8 [2, 1] on [0, 1]
    }
    ucp.shard rank 1 shape [8, 2] {
      ucp.piece [4, 2] src 8 [2, 1] dst 0 [2, 1] on [1]
      ucp.piece [4, 2] src 16 [2, 1] dst 8 [2, 1] on [0, 1]
    }
  }
}


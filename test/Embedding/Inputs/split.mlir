ucp.param @w shape [4, 2] world 2 {
  ucp.shard rank 0 shape [2, 2] {
    ucp.piece [1, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
    ucp.piece [1, 2] src 2 [2, 1] dst 2 [2, 1] on [0]
  }
  ucp.shard rank 1 shape [2, 2] {
    ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
  }
}

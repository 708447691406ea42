ucp.param @w shape [4, 2] world 1 {
  ucp.shard rank 0 shape [4, 2] {
    ucp.piece [4, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
  }
}

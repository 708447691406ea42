ucp.param @h shape [4] world 1 {
  ucp.shard rank 0 shape [2] {
    ucp.piece [2] src 0 [1] dst 0 [1] on [0]
  }
}

module {
  ucp.param @weight shape [6, 2] world 2 vocab 5 {
    ucp.shard rank 0 shape [3, 2] {
      ucp.piece [3, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
    }
    ucp.shard rank 1 shape [3, 2] {
      ucp.piece [3, 2] src 6 [2, 1] dst 0 [2, 1] on [1]
    }
  }
}

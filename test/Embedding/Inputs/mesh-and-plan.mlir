mesh.mesh @mesh0(shape = 2)
func.func @step(%w: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = mesh.shard %w to <@mesh0, [[0]]> : tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
ucp.plan @gather source_world 2 target_world 1 {
  ucp.source_shard rank 0 shape [2, 2]
  ucp.source_shard rank 1 shape [2, 2]
  ucp.target_shard rank 0 shape [4, 2] {
    ucp.copy [4] from 0 at 0 [1] to 0 [1]
    ucp.copy [4] from 1 at 0 [1] to 4 [1]
  }
}

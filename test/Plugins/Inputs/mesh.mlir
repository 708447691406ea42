mesh.mesh @mesh0(shape = 2x2)
func.func @step(%w: tensor<4x6xf32>, %b: tensor<6xf32>) -> tensor<4x6xf32> {
  %0 = mesh.shard %w to <@mesh0, [[0]]> : tensor<4x6xf32>
  %1 = mesh.shard %b to <@mesh0, [[]]> : tensor<6xf32>
  %2 = mesh.shard %w to <@mesh0, [[1], [0]]> : tensor<4x6xf32>
  %3 = mesh.shard %w to <@mesh0, [[0, 1]]> : tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// RUN: affine-opt %s -split-input-file --ucp-import-mesh --ucp-verify -verify-diagnostics | FileCheck %s

// Each mesh.shard gains the ucp.param of its sharding (devices row-major
// over the mesh, the last axis fastest) and a ucp.layout naming it; the
// maps verify.
// CHECK-LABEL: ucp.param @step_shard0 shape [4, 6] world 4 {
// CHECK-NEXT: ucp.shard rank 0 shape [2, 6] {
// CHECK-NEXT: ucp.piece [2, 6] src 0 [6, 1] dst 0 [6, 1] on [0, 1]
// CHECK: ucp.shard rank 1 shape [2, 6] {
// CHECK-NEXT: ucp.piece [2, 6] src 0 [6, 1] dst 0 [6, 1] on [0, 1]
// CHECK: ucp.shard rank 2 shape [2, 6] {
// CHECK-NEXT: ucp.piece [2, 6] src 12 [6, 1] dst 0 [6, 1] on [2, 3]
// A replicated bias: every device holds all of it.
// CHECK-LABEL: ucp.param @step_shard1 shape [6] world 4 {
// CHECK: ucp.piece [6] src 0 [1] dst 0 [1] on [0, 1, 2, 3]
// Rows over axis 1, columns over axis 0: device 1 = (0, 1) holds rows 2-3
// of columns 0-2, device 2 = (1, 0) rows 0-1 of columns 3-5.
// CHECK-LABEL: ucp.param @step_shard2 shape [4, 6] world 4 {
// CHECK: ucp.shard rank 1 shape [2, 3] {
// CHECK-NEXT: ucp.piece [2, 3] src 12 [6, 1] dst 0 [3, 1] on [1]
// CHECK: ucp.shard rank 2 shape [2, 3] {
// CHECK-NEXT: ucp.piece [2, 3] src 3 [6, 1] dst 0 [3, 1] on [2]
// Rows over axes [0, 1]: four blocks, axis 0 outer.
// CHECK-LABEL: ucp.param @step_shard3 shape [4, 6] world 4 {
// CHECK: ucp.shard rank 3 shape [1, 6] {
// CHECK-NEXT: ucp.piece [1, 6] src 18 [6, 1] dst 0 [6, 1] on [3]
// CHECK: mesh.shard %arg0 to <@mesh0, {{\[\[}}0]]> {ucp.layout = #ucp.layout<@step_shard0>}
// CHECK: mesh.shard %arg1 to <@mesh0, {{\[\[}}]]> {ucp.layout = #ucp.layout<@step_shard1>}
mesh.mesh @mesh0(shape = 2x2)
func.func @step(%w: tensor<4x6xf32>, %b: tensor<6xf32>) -> tensor<4x6xf32> {
  %0 = mesh.shard %w to <@mesh0, [[0]]> : tensor<4x6xf32>
  %1 = mesh.shard %b to <@mesh0, [[]]> : tensor<6xf32>
  %2 = mesh.shard %w to <@mesh0, [[1], [0]]> : tensor<4x6xf32>
  %3 = mesh.shard %w to <@mesh0, [[0, 1]]> : tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// A name already taken is skipped.
// CHECK-LABEL: ucp.param @f_shard1 shape [8] world 3 {
// CHECK: ucp.shard rank 2 shape [8] {
// CHECK-NEXT: ucp.piece [8] src 0 [1] dst 0 [1] on [0, 1, 2]
mesh.mesh @line(shape = 3)
func.func @f_shard0() {
  return
}
func.func @f(%v: tensor<8xf32>) {
  %0 = mesh.shard %v to <@line, [[]]> : tensor<8xf32>
  return
}

// -----

mesh.mesh @mesh0(shape = 2x2)
func.func @partial(%w: tensor<4x6xf32>) {
  // expected-error @+1 {{a partial tensor (partial axes [1]): each device holds a summand of F, not a view of it, which no ucp map describes}}
  %0 = mesh.shard %w to <@mesh0, [[0]], partial = sum[1]> : tensor<4x6xf32>
  return
}

// -----

mesh.mesh @mesh0(shape = 2x2)
func.func @uneven(%w: tensor<5x6xf32>) {
  // expected-error @+1 {{dimension 0 of 5 does not split evenly into 2 blocks over mesh axes [0]}}
  %0 = mesh.shard %w to <@mesh0, [[0]]> : tensor<5x6xf32>
  return
}

// -----

mesh.mesh @mesh0(shape = 2x2)
func.func @dynamic(%v: tensor<?x6xf32>) {
  // expected-error @+1 {{a tensor of dynamic shape 'tensor<?x6xf32>': a ucp map needs the shape of F}}
  %0 = mesh.shard %v to <@mesh0, [[0]]> : tensor<?x6xf32>
  return
}

// -----

mesh.mesh @mesh0(shape = 2x?)
func.func @dynamic_mesh(%w: tensor<4x6xf32>) {
  // expected-error @+1 {{mesh @mesh0 has a dynamic shape: its devices are not known}}
  %0 = mesh.shard %w to <@mesh0, [[0]]> : tensor<4x6xf32>
  return
}

// -----

mesh.mesh @mesh0(shape = 2x2)
func.func @out_of_range(%w: tensor<4x6xf32>) {
  // expected-error @+1 {{mesh axis 2 of dimension 0 is out of range or used twice on a mesh of rank 2}}
  %0 = mesh.shard %w to <@mesh0, [[2]]> : tensor<4x6xf32>
  return
}

// -----

// A shard in a nested module: its param goes into that module, the symbol
// table its layout is looked up in; the outer module's shard gets its own.
// Each param comes just before the function whose shard it describes.
// CHECK-LABEL: module {
// CHECK:         mesh.mesh @mesh0
// CHECK:         module @inner {
// CHECK:           mesh.mesh @mesh1
// CHECK-NEXT:      ucp.param @inner_shard0 shape [4, 6] world 4
// CHECK:           func.func @inner
// CHECK:           mesh.shard {{.*}} {ucp.layout = #ucp.layout<@inner_shard0>}
// CHECK:         ucp.param @outer_shard0 shape [4, 6] world 2
// CHECK:         func.func @outer
// CHECK-NEXT:      mesh.shard {{.*}} {ucp.layout = #ucp.layout<@outer_shard0>}
mesh.mesh @mesh0(shape = 2)
module @inner {
  mesh.mesh @mesh1(shape = 4)
  func.func @inner(%w: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = mesh.shard %w to <@mesh1, [[0]]> : tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
}
func.func @outer(%w: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = mesh.shard %w to <@mesh0, [[], [0]]> : tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

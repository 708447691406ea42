// RUN: affine-opt %s -split-input-file --ucp-verify -verify-diagnostics | FileCheck %s

// A layout as the encoding of a tensor type is checked as the annotation
// is: the type alone when it is built (a static shape), the parameter it
// names by --ucp-verify, at the op defining each value.

// CHECK-LABEL: func.func @step
// CHECK-SAME: tensor<4x2xf32, #ucp.layout<@w>>
// CHECK: func.func private @external(tensor<4x2xbf16, #ucp.layout<@w>>)
ucp.param @w shape [4, 2] world 2 {
  ucp.shard rank 0 shape [2, 2] {
    ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
  }
  ucp.shard rank 1 shape [2, 2] {
    ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
  }
}
func.func @step(%w: tensor<4x2xf32, #ucp.layout<@w>>) -> tensor<4x2xf32, #ucp.layout<@w>> {
  %0 = arith.addf %w, %w {ucp.layout = #ucp.layout<@w>} : tensor<4x2xf32, #ucp.layout<@w>>
  return %0 : tensor<4x2xf32, #ucp.layout<@w>>
}
func.func private @external(tensor<4x2xbf16, #ucp.layout<@w>>)

// -----

// expected-error @+1 {{a #ucp.layout encoding needs a statically shaped tensor}}
func.func @dynamic(%w: tensor<?x2xf32, #ucp.layout<@w>>) {
  return
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
// expected-error @+1 {{'ucp.layout' on block argument #0 of type 'tensor<8xf32, #ucp.layout<@w>>': parameter 'w' has shape [4]}}
func.func @argument(%w: tensor<8xf32, #ucp.layout<@w>>) {
  // expected-error @+1 {{'ucp.layout' on result #0 of type 'tensor<2xf32, #ucp.layout<@w>>': parameter 'w' has shape [4]}}
  %0 = arith.constant dense<0.0> : tensor<2xf32, #ucp.layout<@w>>
  // expected-error @+1 {{'ucp.layout' names @v, which is no ucp.param of the enclosing symbol table}}
  %1 = arith.constant dense<0.0> : tensor<4xf32, #ucp.layout<@v>>
  return
}
// expected-error @+1 {{'ucp.layout' on function result #0 of type 'tensor<2xf32, #ucp.layout<@w>>': parameter 'w' has shape [4]}}
func.func private @declared(tensor<4xf32, #ucp.layout<@w>>) -> tensor<2xf32, #ucp.layout<@w>>

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
ucp.param @v shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
func.func @both(%w: tensor<4xf32, #ucp.layout<@w>>) {
  // expected-error @+1 {{'ucp.layout' on the result names @v but its type 'tensor<4xf32, #ucp.layout<@w>>' names @w}}
  %0 = arith.addf %w, %w {ucp.layout = #ucp.layout<@v>} : tensor<4xf32, #ucp.layout<@w>>
  return
}

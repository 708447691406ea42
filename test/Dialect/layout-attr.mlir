// RUN: affine-opt %s -split-input-file --ucp-verify -verify-diagnostics | FileCheck %s

// What an annotation alone tells is checked when it is parsed; the param it
// names is a use of a symbol, checked by --ucp-verify for all annotations at
// once, each symbol table indexed once (layout-uses-parsed.mlir).

// A layout annotates function arguments, an op's result and a global, and
// survives printing and passes.
// CHECK: func.func @step(%arg0: tensor<4x2xf32> {ucp.layout = #ucp.layout<@w>}, %arg1: memref<4x2xbf16> {ucp.layout = #ucp.layout<@w>})
// CHECK: arith.constant {ucp.layout = #ucp.layout<@w>} dense<0.000000e+00> : tensor<4x2xf32>
// CHECK: memref.global @g : memref<4x2xf32> = uninitialized {ucp.layout = #ucp.layout<@w>}
ucp.param @w shape [4, 2] world 2 {
  ucp.shard rank 0 shape [2, 2] {
    ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
  }
  ucp.shard rank 1 shape [2, 2] {
    ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
  }
}
func.func @step(%w: tensor<4x2xf32> {ucp.layout = #ucp.layout<@w>},
                %m: memref<4x2xbf16> {ucp.layout = #ucp.layout<@w>}) {
  %zero = arith.constant {ucp.layout = #ucp.layout<@w>} dense<0.0> : tensor<4x2xf32>
  return
}
memref.global @g : memref<4x2xf32> = uninitialized {ucp.layout = #ucp.layout<@w>}

// -----

ucp.param @w shape [4, 2] world 1 {
  ucp.shard rank 0 shape [4, 2] {
    ucp.piece [4, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
  }
}
// expected-error @+1 {{'ucp.layout' on argument #0 of type 'tensor<2x4xf32>': parameter 'w' has shape [4, 2]}}
func.func @transposed(%w: tensor<2x4xf32> {ucp.layout = #ucp.layout<@w>}) {
  return
}

// -----

// expected-error @+1 {{'ucp.layout' names @nowhere, which is no ucp.param of the enclosing symbol table}}
func.func @unknown(%w: tensor<4xf32> {ucp.layout = #ucp.layout<@nowhere>}) {
  return
}

// -----

func.func @f() {
  return
}
// expected-error @+1 {{'ucp.layout' names @f, which is no ucp.param of the enclosing symbol table}}
func.func @not_a_param(%w: tensor<4xf32> {ucp.layout = #ucp.layout<@f>}) {
  return
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
// expected-error @+1 {{'ucp.layout' on argument #0 of type 'tensor<?xf32>': the layout's shape is static, this type's is not}}
func.func @dynamic(%w: tensor<?xf32> {ucp.layout = #ucp.layout<@w>}) {
  return
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
// expected-error @+1 {{'ucp.layout' on argument #0 of type 'i32': a layout describes a ranked tensor or memref}}
func.func @scalar(%w: i32 {ucp.layout = #ucp.layout<@w>}) {
  return
}

// -----

ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
func.func @not_a_layout() {
  // expected-error @+1 {{'ucp.layout' must be a #ucp.layout, got "w"}}
  %c = arith.constant {ucp.layout = "w"} dense<0.0> : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{unknown ucp attribute 'ucp.shape' on an op}}
func.func @other_name() attributes {ucp.shape = 1} {
  return
}

// -----

// expected-error @+1 {{unknown ucp attribute 'ucp.shape' on an argument}}
func.func @other_argument_name(%w: tensor<4xf32> {ucp.shape = 1}) {
  return
}

// -----

func.func @no_value() {
  // expected-error @+1 {{'ucp.layout' annotates a value: an op with one result, a global with a type, or a function argument}}
  "func.return"() {ucp.layout = #ucp.layout<@w>} : () -> ()
}

// -----

// Every annotation at fault is reported, not only the first.
ucp.param @w shape [4] world 1 {
  ucp.shard rank 0 shape [4] {
    ucp.piece [4] src 0 [1] dst 0 [1] on [0]
  }
}
func.func @two(%a: tensor<8xf32>) {
  // expected-error @+1 {{'ucp.layout' on the result of type 'tensor<2xf32>': parameter 'w' has shape [4]}}
  %c = arith.constant {ucp.layout = #ucp.layout<@w>} dense<0.0> : tensor<2xf32>
  // expected-error @+1 {{'ucp.layout' names @v, which is no ucp.param of the enclosing symbol table}}
  %d = arith.constant {ucp.layout = #ucp.layout<@v>} dense<0.0> : tensor<4xf32>
  return
}

// -----

// A layout names a param of its nearest symbol table: a nested module's.
// CHECK-LABEL: module @inner
// CHECK: memref.global @g : memref<4xf32> = uninitialized {ucp.layout = #ucp.layout<@w>}
module @inner {
  ucp.param @w shape [4] world 1 {
    ucp.shard rank 0 shape [4] {
      ucp.piece [4] src 0 [1] dst 0 [1] on [0]
    }
  }
  memref.global @g : memref<4xf32> = uninitialized {ucp.layout = #ucp.layout<@w>}
}

// -----

module @inner {
  ucp.param @w shape [4] world 1 {
    ucp.shard rank 0 shape [4] {
      ucp.piece [4] src 0 [1] dst 0 [1] on [0]
    }
  }
}
// expected-error @+1 {{'ucp.layout' names @w, which is no ucp.param of the enclosing symbol table}}
memref.global @outer : memref<4xf32> = uninitialized {ucp.layout = #ucp.layout<@w>}

// RUN: affine-opt %s | FileCheck %s
// RUN: not affine-opt %s --ucp-verify 2>&1 | FileCheck %s --check-prefix=VERIFY

// Parsing checks what a layout alone tells, and no op verifier looks up
// another op: a layout naming no param parses and prints back unchanged.
// --ucp-verify checks every use of a symbol by a layout, in linear time
// (bench/layout-verify-bench.py).
// CHECK: func.func @unknown(%arg0: tensor<4xf32> {ucp.layout = #ucp.layout<@nowhere>})
// VERIFY: error: 'ucp.layout' names @nowhere, which is no ucp.param of the enclosing symbol table
func.func @unknown(%w: tensor<4xf32> {ucp.layout = #ucp.layout<@nowhere>}) {
  return
}

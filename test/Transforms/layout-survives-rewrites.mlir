// A layout carried as the tensor encoding is part of every value's type, so
// MLIR's own rewrites keep it; the same layout as a discardable attribute
// is lost whenever its op is inlined or folded away, and stops CSE from
// merging the op it annotates.
//
// RUN: affine-opt %s --inline | FileCheck %s --check-prefixes=CHECK,INLINE
// RUN: affine-opt %s --cse | FileCheck %s --check-prefixes=CHECK,CSE
// RUN: affine-opt %s --canonicalize | FileCheck %s --check-prefixes=CHECK,CANON
// The layouts still name their parameter after all three, and verify.
// RUN: affine-opt %s --inline --cse --canonicalize --ucp-verify | FileCheck %s --check-prefix=ALL

ucp.param @w shape [4, 2] world 2 {
  ucp.shard rank 0 shape [2, 2] {
    ucp.piece [2, 2] src 0 [2, 1] dst 0 [2, 1] on [0]
  }
  ucp.shard rank 1 shape [2, 2] {
    ucp.piece [2, 2] src 4 [2, 1] dst 0 [2, 1] on [1]
  }
}

// The encoding.
func.func private @double(%x: tensor<4x2xf32, #ucp.layout<@w>>) -> tensor<4x2xf32, #ucp.layout<@w>> {
  %0 = arith.addf %x, %x : tensor<4x2xf32, #ucp.layout<@w>>
  return %0 : tensor<4x2xf32, #ucp.layout<@w>>
}

// CHECK-LABEL: func.func @encoded
// CHECK-SAME: (%[[W:.*]]: tensor<4x2xf32, #ucp.layout<@w>>) -> tensor<4x2xf32, #ucp.layout<@w>>
func.func @encoded(%w: tensor<4x2xf32, #ucp.layout<@w>>) -> tensor<4x2xf32, #ucp.layout<@w>> {
  // INLINE: %[[D:.*]] = arith.addf %[[W]], %[[W]] : tensor<4x2xf32, #ucp.layout<@w>>
  // CSE: %[[D:.*]] = call @double(%[[W]]) : (tensor<4x2xf32, #ucp.layout<@w>>) -> tensor<4x2xf32, #ucp.layout<@w>>
  %0 = call @double(%w) : (tensor<4x2xf32, #ucp.layout<@w>>) -> tensor<4x2xf32, #ucp.layout<@w>>
  // CSE-NEXT: %[[M:.*]] = arith.mulf %[[D]], %[[D]] : tensor<4x2xf32, #ucp.layout<@w>>
  // CSE: arith.addf %[[M]], %[[M]] : tensor<4x2xf32, #ucp.layout<@w>>
  %1 = arith.mulf %0, %0 : tensor<4x2xf32, #ucp.layout<@w>>
  %2 = arith.mulf %0, %0 : tensor<4x2xf32, #ucp.layout<@w>>
  // Adding -0.0 folds away; the value returned in its place has the type.
  // CANON-NOT: arith.constant
  // CANON: %[[S:.*]] = arith.addf %{{.*}}, %{{.*}} : tensor<4x2xf32, #ucp.layout<@w>>
  // CANON-NEXT: return %[[S]] : tensor<4x2xf32, #ucp.layout<@w>>
  %zero = arith.constant dense<-0.0> : tensor<4x2xf32, #ucp.layout<@w>>
  %3 = arith.addf %1, %2 : tensor<4x2xf32, #ucp.layout<@w>>
  %4 = arith.addf %3, %zero : tensor<4x2xf32, #ucp.layout<@w>>
  return %4 : tensor<4x2xf32, #ucp.layout<@w>>
}

// The discardable attribute: the same program loses a layout to inlining
// and to canonicalization, and is not simplified by CSE.
func.func private @double_annotated(%x: tensor<4x2xf32> {ucp.layout = #ucp.layout<@w>}) -> tensor<4x2xf32> {
  %0 = arith.addf %x, %x : tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @annotated
// CHECK-SAME: (%[[A:.*]]: tensor<4x2xf32>)
func.func @annotated(%w: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // Inlined, the callee's annotated argument is the caller's plain one.
  // INLINE: arith.addf %[[A]], %[[A]] : tensor<4x2xf32>{{$}}
  %0 = call @double_annotated(%w) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  // CSE keeps the annotation, but only by treating the annotated op as
  // different: the two products are no longer merged.
  // CSE: arith.mulf %{{.*}}, %{{.*}} : tensor<4x2xf32>{{$}}
  // CSE-NEXT: arith.mulf %{{.*}}, %{{.*}} {ucp.layout = #ucp.layout<@w>} : tensor<4x2xf32>
  %1 = arith.mulf %0, %0 : tensor<4x2xf32>
  %2 = arith.mulf %0, %0 {ucp.layout = #ucp.layout<@w>} : tensor<4x2xf32>
  // Canonicalization folds the annotated op away.
  // CANON: %[[S:.*]] = arith.addf %{{.*}}, %{{.*}} : tensor<4x2xf32>{{$}}
  // CANON-NEXT: return %[[S]] : tensor<4x2xf32>
  %zero = arith.constant dense<-0.0> : tensor<4x2xf32>
  %3 = arith.addf %1, %2 : tensor<4x2xf32>
  %4 = arith.addf %3, %zero {ucp.layout = #ucp.layout<@w>} : tensor<4x2xf32>
  return %4 : tensor<4x2xf32>
}

// ALL-LABEL: func.func @encoded
// ALL-SAME: tensor<4x2xf32, #ucp.layout<@w>>
// ALL-NEXT: arith.addf {{.*}} : tensor<4x2xf32, #ucp.layout<@w>>
// ALL-NEXT: arith.mulf {{.*}} : tensor<4x2xf32, #ucp.layout<@w>>
// ALL-NEXT: arith.addf {{.*}} : tensor<4x2xf32, #ucp.layout<@w>>
// ALL-NEXT: return {{.*}} : tensor<4x2xf32, #ucp.layout<@w>>

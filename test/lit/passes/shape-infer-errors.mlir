// shape-infer's errors name the op whose inference fails, at its source line.
// RUN: not dlc-opt %s --split-input-file -p shape-infer 2>&1 | filecheck %s
// RUN: dlc-opt %s --split-input-file -p shape-infer --verify-diagnostics
// RUN: not dlc-opt %s -p 'shape-infer{strict=true}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: dlc-opt: error: pass 'shape-infer' has no option 'strict' (it takes no options)
// CHECK-NOT: Traceback

// The argument changed to 4 elements, which no longer broadcasts with 2x3.
func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %e = graph.exp %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{pass 'shape-infer' failed: 'graph.add' %c (op #1 of @no_broadcast): shapes 2x3 and 4 are not broadcast-compatible}}
  %c = graph.add %e, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
// CHECK: shape-infer-errors.mlir:[[# @LINE - 1]]:3: error: pass 'shape-infer' failed: 'graph.add' %c (op #1 of @no_broadcast): shapes 2x3 and 4 are not broadcast-compatible (dims [3, 4] at axis -1)
  func.return %c : tensor<2x3xf32>
}

// -----

// An inferred type that the next op rejects: the error is at that op.
func.func @bad_downstream(%x: tensor<6x5xf32>, %w: tensor<3x4xf32>) -> tensor<6x4xf32> {
  %t = graph.transpose %x : (tensor<6x5xf32>) -> tensor<6x5xf32>
  // expected-error @+1 {{'graph.matmul' %m (op #1 of @bad_downstream): contraction dims differ: lhs has K=6, rhs has K=3}}
  %m = graph.matmul %t, %w : (tensor<6x5xf32>, tensor<3x4xf32>) -> tensor<6x4xf32>
// CHECK: shape-infer-errors.mlir:[[# @LINE - 1]]:3: error: pass 'shape-infer' failed: 'graph.matmul' %m (op #1 of @bad_downstream): contraction dims differ: lhs has K=6, rhs has K=3
  func.return %m : tensor<6x4xf32>
}

// lower-to-loops errors: one line naming the op and its place, no traceback.
// RUN: not dlc-opt %s --split-input-file -p lower-to-loops 2>&1 | filecheck %s
// RUN: not dlc-opt %s --split-input-file -p lower-to-loops 2>&1 | filecheck %s --check-prefix=NOTRACE
// NOTRACE-NOT: Traceback

func.func @composite(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = graph.gelu %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK: lower_to_loops_errors.mlir:[[# @LINE - 3]]:3: error: pass 'lower-to-loops' failed: 'graph.gelu' is a composite op: run legalize first

// -----

func.func @dense(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %e = graph.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = graph.dense %e, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: lower_to_loops_errors.mlir:[[# @LINE - 3]]:3: error: pass 'lower-to-loops' failed: 'graph.dense' is a composite op: run legalize first

// -----

func.func @foreign(%x: tensor<3xf32>) -> tensor<3xf32> {
  %t = arith.addf %x, %x : tensor<3xf32>
  func.return %t : tensor<3xf32>
}
// CHECK: lower_to_loops_errors.mlir:[[# @LINE - 3]]:3: error: pass 'lower-to-loops' failed: 'arith.addf' is not a graph op and cannot be lowered

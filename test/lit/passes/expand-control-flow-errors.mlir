// expand-control-flow refuses to unroll past max-unroll, naming the op.
// RUN: not dlc-opt --pipeline='expand-control-flow{max-unroll=2}' %s 2>&1 | filecheck %s

// CHECK: expand-control-flow-errors.mlir:7:3: error: pass 'expand-control-flow' failed: graph.loop runs 3 iterations, more than max-unroll=2 (raise the option to unroll it)
// CHECK-NOT: Traceback
func.func @f(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %r = graph.loop %m, %c, %x attributes {max_iterations = 3 : i64, num_carried = 1 : i64} {
  ^bb0(%i: tensor<i64>, %k: tensor<i1>, %v: tensor<3xf32>):
    graph.yield %k, %v : (tensor<i1>, tensor<3xf32>) -> ()
  } : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

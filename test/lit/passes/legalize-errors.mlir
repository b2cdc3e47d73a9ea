// legalize takes no options; the error says so in one line (no traceback).
// RUN: not dlc-opt %s -p 'legalize{fast=true}' 2>&1 | filecheck %s
// CHECK:     dlc-opt: error: pass 'legalize' has no option 'fast' (it takes no options)
// CHECK-NOT: Traceback

func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = graph.gelu %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

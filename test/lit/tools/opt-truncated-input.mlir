// The input ends inside a region: the error is at the end of the input.
// RUN: not dlc-opt %s 2>&1 | filecheck %s
// CHECK: opt-truncated-input.mlir:[[# @LINE + 3]]:1: error: unexpected end of input
func.func @truncated(%a: tensor<3xf32>) -> tensor<3xf32> {
  func.return %a : tensor<3xf32>

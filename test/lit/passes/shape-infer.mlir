// shape-infer: result types follow the operands in program order; function
// signatures and call results follow. Placeholder result types (which would
// not verify) are accepted as input when shape-infer runs first.
// RUN: dlc-opt %s -p shape-infer | filecheck %s
// RUN: dlc-opt %s -p shape-infer,shape-infer | filecheck %s

// The argument became 7x5 (batch 7); every result type was still batch 2.
func.func @batch(%x: tensor<7x5xf32>, %w: tensor<3x5xf32>) -> tensor<2x3xf32> {
  %y = graph.dense %x, %w : (tensor<7x5xf32>, tensor<3x5xf32>) -> tensor<2x3xf32>
  %r = graph.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = graph.reduce_sum %r {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %s : tensor<2xf32>
}
// CHECK-LABEL: func.func @batch(%x: tensor<7x5xf32>, %w: tensor<3x5xf32>) -> tensor<7xf32> {
// CHECK-NEXT:    %y = graph.dense %x, %w : (tensor<7x5xf32>, tensor<3x5xf32>) -> tensor<7x3xf32>
// CHECK-NEXT:    %r = graph.relu %y : (tensor<7x3xf32>) -> tensor<7x3xf32>
// CHECK-NEXT:    %s = graph.reduce_sum %r {axes = array<i64: 1>} : (tensor<7x3xf32>) -> tensor<7xf32>
// CHECK-NEXT:    func.return %s : tensor<7xf32>

// Multi-result ops, element-type changes, and a callee defined after its caller.
func.func @caller(%x: tensor<4x6xf32>) -> tensor<1xi1> {
  %c = func.call @halves(%x) : (tensor<4x6xf32>) -> tensor<1xi1>
  func.return %c : tensor<1xi1>
}
func.func @halves(%x: tensor<4x6xf32>) -> tensor<1xi1> {
  %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>} : (tensor<4x6xf32>) -> (tensor<1xf32>, tensor<1xf32>)
  %t = graph.transpose %b : (tensor<1xf32>) -> tensor<1xf32>
  %l = graph.less %a, %a : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>
  func.return %l : tensor<1xi1>
}
// CHECK-LABEL: func.func @caller(%x: tensor<4x6xf32>) -> tensor<4x2xi1> {
// CHECK-NEXT:    %c = func.call @halves(%x) : (tensor<4x6xf32>) -> tensor<4x2xi1>
// CHECK-NEXT:    func.return %c : tensor<4x2xi1>
// CHECK-LABEL: func.func @halves(%x: tensor<4x6xf32>) -> tensor<4x2xi1> {
// CHECK-NEXT:    %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>} : (tensor<4x6xf32>) -> (tensor<4x2xf32>, tensor<4x4xf32>)
// CHECK-NEXT:    %t = graph.transpose %b : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %l = graph.less %a, %a : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xi1>
// CHECK-NEXT:    func.return %l : tensor<4x2xi1>

// Consistent IR is left as it is.
func.func @unchanged(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = graph.add %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK-LABEL: func.func @unchanged(%x: tensor<3xf32>) -> tensor<3xf32> {
// CHECK-NEXT:    %c = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %y = graph.add %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>

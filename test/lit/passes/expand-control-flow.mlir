// expand-control-flow: graph.if -> both bodies + where; graph.scan -> one body
// clone per step on slice rows, outputs concatenated (reversed for direction 1).
// RUN: dlc-opt --pipeline=expand-control-flow %s | filecheck %s

// CHECK-LABEL: func.func @branches(
// CHECK-NEXT:    %n = graph.neg %x
// CHECK-NEXT:    %r = graph.where %c, %n, %x : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %r

// CHECK-LABEL: func.func @scan(
// CHECK-NEXT:    %0 = graph.slice %xs {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 1>, steps = array<i64: 1>}
// CHECK-NEXT:    %1 = graph.reshape %0 {shape = array<i64: 2>}
// CHECK-NEXT:    %n = graph.add %init, %1
// CHECK:         %n_2 = graph.add %n_1, %5
// CHECK-NEXT:    %6 = graph.reshape %n_2 {shape = array<i64: 1, 2>}
// CHECK-NEXT:    %7 = graph.reshape %n_1 {shape = array<i64: 1, 2>}
// CHECK-NEXT:    %8 = graph.reshape %n {shape = array<i64: 1, 2>}
// CHECK-NEXT:    %ys = graph.concat %6, %7, %8 {axis = 0 : i64}
// CHECK-NEXT:    func.return %n_2, %ys
// CHECK-NOT:     graph.scan
func.func @branches(%c: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %r = graph.if %c, %x {
  ^bb0(%a: tensor<3xf32>):
    %n = graph.neg %a : (tensor<3xf32>) -> tensor<3xf32>
    graph.yield %n : (tensor<3xf32>) -> ()
  } {
  ^bb0(%b: tensor<3xf32>):
    graph.yield %b : (tensor<3xf32>) -> ()
  } : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}
func.func @scan(%init: tensor<2xf32>, %xs: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
  %s, %ys = graph.scan %init, %xs attributes {num_carried = 1 : i64, num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 1>, scan_output_directions = array<i64: 1>} {
  ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
    %n = graph.add %acc, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    graph.yield %n, %n : (tensor<2xf32>, tensor<2xf32>) -> ()
  } : (tensor<2xf32>, tensor<2x3xf32>) -> (tensor<2xf32>, tensor<3x2xf32>)
  func.return %s, %ys : tensor<2xf32>, tensor<3x2xf32>
}

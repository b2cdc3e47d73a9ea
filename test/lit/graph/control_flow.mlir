// Round trips of the region ops (graph.if, graph.loop, graph.scan, graph.yield):
// custom -> print -> parse -> print, and custom -> generic -> custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s
// RUN: dlc-opt --pipeline=shape-infer %s | filecheck %s

// CHECK-LABEL: func.func @branches(%c: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
// CHECK-NEXT:    %r = graph.if %c, %x {
// CHECK-NEXT:    ^bb0(%a: tensor<3xf32>):
// CHECK-NEXT:      %n = graph.neg %a : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:      graph.yield %n : (tensor<3xf32>) -> ()
// CHECK-NEXT:    } {
// CHECK-NEXT:    ^bb0(%b: tensor<3xf32>):
// CHECK-NEXT:      graph.yield %b : (tensor<3xf32>) -> ()
// CHECK-NEXT:    } : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
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

// CHECK-LABEL: func.func @loop(
// CHECK:         %r, %s = graph.loop %m, %c, %x, %k attributes {max_iterations = 5 : i64, num_carried = 1 : i64} {
// CHECK-NEXT:    ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<1x3xf32>, %w: tensor<3xf32>):
// CHECK-NEXT:      %n = graph.add %v, %w : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:      graph.yield %cond, %n, %i : (tensor<i1>, tensor<1x3xf32>, tensor<i64>) -> ()
// CHECK-NEXT:    } : (tensor<i64>, tensor<i1>, tensor<1x3xf32>, tensor<3xf32>) -> (tensor<1x3xf32>, tensor<5xi64>)
func.func @loop(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<1x3xf32>, %k: tensor<3xf32>) -> (tensor<1x3xf32>, tensor<5xi64>) {
  %r, %s = graph.loop %m, %c, %x, %k attributes {max_iterations = 5 : i64, num_carried = 1 : i64} {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<1x3xf32>, %w: tensor<3xf32>):
    %n = graph.add %v, %w : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
    graph.yield %cond, %n, %i : (tensor<i1>, tensor<1x3xf32>, tensor<i64>) -> ()
  } : (tensor<i64>, tensor<i1>, tensor<1x3xf32>, tensor<3xf32>) -> (tensor<1x3xf32>, tensor<5xi64>)
  func.return %r, %s : tensor<1x3xf32>, tensor<5xi64>
}

// CHECK-LABEL: func.func @scan(
// CHECK:         %s, %ys = graph.scan %init, %xs attributes {num_carried = 1 : i64, num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 1>, scan_output_directions = array<i64: 1>} {
// CHECK-NEXT:    ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
// CHECK:         } : (tensor<2xf32>, tensor<2x7xf32>) -> (tensor<2xf32>, tensor<7x2xf32>)
func.func @scan(%init: tensor<2xf32>, %xs: tensor<2x7xf32>) -> (tensor<2xf32>, tensor<7x2xf32>) {
  %s, %ys = graph.scan %init, %xs attributes {num_carried = 1 : i64, num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 1>, scan_output_directions = array<i64: 1>} {
  ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
    %n = graph.add %acc, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    graph.yield %n, %n : (tensor<2xf32>, tensor<2xf32>) -> ()
  } : (tensor<2xf32>, tensor<2x7xf32>) -> (tensor<2xf32>, tensor<7x2xf32>)
  func.return %s, %ys : tensor<2xf32>, tensor<7x2xf32>
}

// Round trips of the simple-ops work (acos/asin/atan, bitwise ops and shifts,
// 3-D pools, max pooling with indices, det): custom -> print -> parse -> print,
// and custom -> generic -> custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @trig(%x: tensor<3x1x5xf32>, %h: tensor<4xf16>, %d: tensor<7xf64>) {
// CHECK-NEXT:  %0 = graph.acos %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %1 = graph.asin %h : (tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  %2 = graph.atan %d : (tensor<7xf64>) -> tensor<7xf64>
// CHECK-NEXT:  func.return
// CHECK-LABEL: func.func @bitwise(%a: tensor<2x3xi32>, %b: tensor<3xi32>, %u: tensor<5xui8>, %v: tensor<1xui8>, %l: tensor<7xi64>) {
// CHECK-NEXT:  %0 = graph.bitwise_not %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:  %1 = graph.bitwise_and %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:  %2 = graph.bitwise_or %u, %v : (tensor<5xui8>, tensor<1xui8>) -> tensor<5xui8>
// CHECK-NEXT:  %3 = graph.bitwise_xor %l, %l : (tensor<7xi64>, tensor<7xi64>) -> tensor<7xi64>
// CHECK-NEXT:  %4 = graph.shift_left %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:  %5 = graph.shift_right %u, %v : (tensor<5xui8>, tensor<1xui8>) -> tensor<5xui8>
// CHECK-NEXT:  func.return
// CHECK-LABEL: func.func @pools(%x: tensor<1x3x5x6x7xf32>, %y: tensor<2x1x7xf32>, %i: tensor<1x2x5x5xi32>) {
// CHECK-NEXT:  %0 = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x3x5x6x7xf32>) -> tensor<1x3x2x3x3xf32>
// CHECK-NEXT:  %1 = graph.avg_pool3d %x {kernel = array<i64: 3, 3, 3>, padding = array<i64: 1, 1, 1, 1, 1, 1>, count_include_pad = true, ceil_mode = true} : (tensor<1x3x5x6x7xf32>) -> tensor<1x3x5x6x7xf32>
// CHECK-NEXT:  %2, %3 = graph.max_pool_with_indices %y {kernel = array<i64: 3>, dilations = array<i64: 2>} : (tensor<2x1x7xf32>) -> (tensor<2x1x3xf32>, tensor<2x1x3xi64>)
// CHECK-NEXT:  %4, %5 = graph.max_pool_with_indices %i {kernel = array<i64: 2, 2>, storage_order = 1 : i64} : (tensor<1x2x5x5xi32>) -> (tensor<1x2x4x4xi32>, tensor<1x2x4x4xi64>)
// CHECK-NEXT:  func.return
// CHECK-LABEL: func.func @det(%x: tensor<3x3xf32>, %y: tensor<2x1x4x4xf64>) {
// CHECK-NEXT:  %0 = graph.det %x : (tensor<3x3xf32>) -> tensor<f32>
// CHECK-NEXT:  %1 = graph.det %y : (tensor<2x1x4x4xf64>) -> tensor<2x1xf64>
// CHECK-NEXT:  func.return

func.func @trig(%x: tensor<3x1x5xf32>, %h: tensor<4xf16>, %d: tensor<7xf64>) {
  %0 = graph.acos %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %1 = graph.asin %h : (tensor<4xf16>) -> tensor<4xf16>
  %2 = graph.atan %d : (tensor<7xf64>) -> tensor<7xf64>
  func.return
}
func.func @bitwise(%a: tensor<2x3xi32>, %b: tensor<3xi32>, %u: tensor<5xui8>, %v: tensor<1xui8>, %l: tensor<7xi64>) {
  %0 = graph.bitwise_not %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %1 = graph.bitwise_and %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %2 = graph.bitwise_or %u, %v : (tensor<5xui8>, tensor<1xui8>) -> tensor<5xui8>
  %3 = graph.bitwise_xor %l, %l : (tensor<7xi64>, tensor<7xi64>) -> tensor<7xi64>
  %4 = graph.shift_left %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %5 = graph.shift_right %u, %v : (tensor<5xui8>, tensor<1xui8>) -> tensor<5xui8>
  func.return
}
func.func @pools(%x: tensor<1x3x5x6x7xf32>, %y: tensor<2x1x7xf32>, %i: tensor<1x2x5x5xi32>) {
  %0 = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x3x5x6x7xf32>) -> tensor<1x3x2x3x3xf32>
  %1 = graph.avg_pool3d %x {kernel = array<i64: 3, 3, 3>, padding = array<i64: 1, 1, 1, 1, 1, 1>, count_include_pad = true, ceil_mode = true} : (tensor<1x3x5x6x7xf32>) -> tensor<1x3x5x6x7xf32>
  %2, %3 = graph.max_pool_with_indices %y {kernel = array<i64: 3>, dilations = array<i64: 2>} : (tensor<2x1x7xf32>) -> (tensor<2x1x3xf32>, tensor<2x1x3xi64>)
  %4, %5 = graph.max_pool_with_indices %i {kernel = array<i64: 2, 2>, storage_order = 1 : i64} : (tensor<1x2x5x5xi32>) -> (tensor<1x2x4x4xi32>, tensor<1x2x4x4xi64>)
  func.return
}
func.func @det(%x: tensor<3x3xf32>, %y: tensor<2x1x4x4xf64>) {
  %0 = graph.det %x : (tensor<3x3xf32>) -> tensor<f32>
  %1 = graph.det %y : (tensor<2x1x4x4xf64>) -> tensor<2x1xf64>
  func.return
}

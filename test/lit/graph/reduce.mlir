// Round trips of the reductions (axes, keepdims) and argmax/argmin:
// custom -> print -> parse -> print, and custom -> generic -> custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @reduce(%x: tensor<3x5x7xf32>, %i: tensor<3x5xi32>, %one: tensor<1xf32>) {
// CHECK-NEXT:  %0 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<3x5x7xf32>) -> tensor<3x7xf32>
// CHECK-NEXT:  %1 = graph.reduce_sum %x {axes = array<i64: 0, -1>, keepdims = true} : (tensor<3x5x7xf32>) -> tensor<1x5x1xf32>
// CHECK-NEXT:  %2 = graph.reduce_sum %x : (tensor<3x5x7xf32>) -> tensor<f32>
// CHECK-NEXT:  %3 = graph.reduce_mean %x {axes = array<i64: 2>} : (tensor<3x5x7xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:  %4 = graph.reduce_max %i {axes = array<i64: 0>, keepdims = true} : (tensor<3x5xi32>) -> tensor<1x5xi32>
// CHECK-NEXT:  %5 = graph.reduce_min %x {axes = array<i64: 0, 2>} : (tensor<3x5x7xf32>) -> tensor<5xf32>
// CHECK-NEXT:  %6 = graph.reduce_prod %one : (tensor<1xf32>) -> tensor<f32>
// CHECK-NEXT:  %7 = graph.argmax %x {axis = 1 : i64} : (tensor<3x5x7xf32>) -> tensor<3x7xi64>
// CHECK-NEXT:  %8 = graph.argmax %i {axis = -1 : i64, keepdims = true, select_last_index = true} : (tensor<3x5xi32>) -> tensor<3x1xi64>
// CHECK-NEXT:  %9 = graph.argmin %x : (tensor<3x5x7xf32>) -> tensor<5x7xi64>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @reduce(%x: tensor<3x5x7xf32>, %i: tensor<3x5xi32>, %one: tensor<1xf32>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<3x5x7xf32>) -> tensor<3x7xf32>
  %1 = graph.reduce_sum %x {axes = array<i64: 0, -1>, keepdims = true} : (tensor<3x5x7xf32>) -> tensor<1x5x1xf32>
  %2 = graph.reduce_sum %x : (tensor<3x5x7xf32>) -> tensor<f32>
  %3 = graph.reduce_mean %x {axes = array<i64: 2>} : (tensor<3x5x7xf32>) -> tensor<3x5xf32>
  %4 = graph.reduce_max %i {axes = array<i64: 0>, keepdims = true} : (tensor<3x5xi32>) -> tensor<1x5xi32>
  %5 = graph.reduce_min %x {axes = array<i64: 0, 2>} : (tensor<3x5x7xf32>) -> tensor<5xf32>
  %6 = graph.reduce_prod %one : (tensor<1xf32>) -> tensor<f32>
  %7 = graph.argmax %x {axis = 1 : i64} : (tensor<3x5x7xf32>) -> tensor<3x7xi64>
  %8 = graph.argmax %i {axis = -1 : i64, keepdims = true, select_last_index = true} : (tensor<3x5xi32>) -> tensor<3x1xi64>
  %9 = graph.argmin %x : (tensor<3x5x7xf32>) -> tensor<5x7xi64>
  func.return
}

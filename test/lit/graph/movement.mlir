// Round trips of the data-movement ops (reshape, transpose, broadcast_to, squeeze,
// unsqueeze, slice, pad, concat, split, gather, resize): custom -> print -> parse -> print,
// and custom -> generic -> custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @movement(%x: tensor<3x5x7xf32>, %c: tensor<3x1xf32>, %u: tensor<1x3x1x5xi64>, %e: tensor<7x3xf32>, %ids: tensor<2x3xi64>, %img: tensor<1x2x3x5xf32>) {
// CHECK-NEXT:  %0 = graph.reshape %x {shape = array<i64: 7, -1>} : (tensor<3x5x7xf32>) -> tensor<7x15xf32>
// CHECK-NEXT:  %1 = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<3x5x7xf32>) -> tensor<5x7x3xf32>
// CHECK-NEXT:  %2 = graph.transpose %x : (tensor<3x5x7xf32>) -> tensor<7x5x3xf32>
// CHECK-NEXT:  %3 = graph.broadcast_to %c {shape = array<i64: 2, 1, 5>} : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:  %4 = graph.squeeze %u {axes = array<i64: 0, -2>} : (tensor<1x3x1x5xi64>) -> tensor<3x5xi64>
// CHECK-NEXT:  %5 = graph.squeeze %u : (tensor<1x3x1x5xi64>) -> tensor<3x5xi64>
// CHECK-NEXT:  %6 = graph.unsqueeze %c {axes = array<i64: 0, -1>} : (tensor<3x1xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT:  %7 = graph.slice %x {starts = array<i64: 1>, ends = array<i64: 6>, axes = array<i64: 2>, steps = array<i64: 2>} : (tensor<3x5x7xf32>) -> tensor<3x5x3xf32>
// CHECK-NEXT:  %8 = graph.slice %x {starts = array<i64: -1, 100>, ends = array<i64: -100, -8>, steps = array<i64: -2, -3>} : (tensor<3x5x7xf32>) -> tensor<2x2x7xf32>
// CHECK-NEXT:  %9 = graph.pad %e {pads = array<i64: 0, 1, 2, 3>, value = 1.500000e+00 : f32} : (tensor<7x3xf32>) -> tensor<9x7xf32>
// CHECK-NEXT:  %10 = graph.pad %e {pads = array<i64: -1, 2, 1, -3>} : (tensor<7x3xf32>) -> tensor<7x2xf32>
// CHECK-NEXT:  %11 = graph.pad %e {pads = array<i64: 2, 1, 1, 2>, mode = "reflect"} : (tensor<7x3xf32>) -> tensor<10x6xf32>
// CHECK-NEXT:  %12 = graph.concat %c, %c, %c {axis = 1 : i64} : (tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @movement(%x: tensor<3x5x7xf32>, %c: tensor<3x1xf32>, %u: tensor<1x3x1x5xi64>, %e: tensor<7x3xf32>, %ids: tensor<2x3xi64>, %img: tensor<1x2x3x5xf32>) {
  %0 = graph.reshape %x {shape = array<i64: 7, -1>} : (tensor<3x5x7xf32>) -> tensor<7x15xf32>
  %1 = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<3x5x7xf32>) -> tensor<5x7x3xf32>
  %2 = graph.transpose %x : (tensor<3x5x7xf32>) -> tensor<7x5x3xf32>
  %3 = graph.broadcast_to %c {shape = array<i64: 2, 1, 5>} : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
  %4 = graph.squeeze %u {axes = array<i64: 0, -2>} : (tensor<1x3x1x5xi64>) -> tensor<3x5xi64>
  %5 = graph.squeeze %u : (tensor<1x3x1x5xi64>) -> tensor<3x5xi64>
  %6 = graph.unsqueeze %c {axes = array<i64: 0, -1>} : (tensor<3x1xf32>) -> tensor<1x3x1x1xf32>
  %7 = graph.slice %x {starts = array<i64: 1>, ends = array<i64: 6>, axes = array<i64: 2>, steps = array<i64: 2>} : (tensor<3x5x7xf32>) -> tensor<3x5x3xf32>
  %8 = graph.slice %x {starts = array<i64: -1, 100>, ends = array<i64: -100, -8>, steps = array<i64: -2, -3>} : (tensor<3x5x7xf32>) -> tensor<2x2x7xf32>
  %9 = graph.pad %e {pads = array<i64: 0, 1, 2, 3>, value = 1.5 : f32} : (tensor<7x3xf32>) -> tensor<9x7xf32>
  %10 = graph.pad %e {pads = array<i64: -1, 2, 1, -3>} : (tensor<7x3xf32>) -> tensor<7x2xf32>
  %11 = graph.pad %e {pads = array<i64: 2, 1, 1, 2>, mode = "reflect"} : (tensor<7x3xf32>) -> tensor<10x6xf32>
  %12 = graph.concat %c, %c, %c {axis = 1 : i64} : (tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  func.return
}

// CHECK-LABEL: func.func @more(%x: tensor<3x7xf32>, %e: tensor<7x3xf32>, %ids: tensor<2x3xi64>, %img: tensor<1x2x3x5xf32>) {
// CHECK-NEXT:  %0 = graph.concat %x, %x {axis = -1 : i64} : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x14xf32>
// CHECK-NEXT:  %1, %2 = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 5>} : (tensor<3x7xf32>) -> (tensor<3x2xf32>, tensor<3x5xf32>)
// CHECK-NEXT:  %3, %4, %5 = graph.split %e {sizes = array<i64: 1, 3, 3>} : (tensor<7x3xf32>) -> (tensor<1x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>)
// CHECK-NEXT:  %6 = graph.gather %e, %ids : (tensor<7x3xf32>, tensor<2x3xi64>) -> tensor<2x3x3xf32>
// CHECK-NEXT:  %7 = graph.gather %x, %ids {axis = 1 : i64} : (tensor<3x7xf32>, tensor<2x3xi64>) -> tensor<3x2x3xf32>
// CHECK-NEXT:  %8 = graph.resize %img {sizes = array<i64: 1, 2, 7, 2>} : (tensor<1x2x3x5xf32>) -> tensor<1x2x7x2xf32>
// CHECK-NEXT:  %9 = graph.resize %img {sizes = array<i64: 1, 2, 6, 10>, mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x2x3x5xf32>) -> tensor<1x2x6x10xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @more(%x: tensor<3x7xf32>, %e: tensor<7x3xf32>, %ids: tensor<2x3xi64>, %img: tensor<1x2x3x5xf32>) {
  %0 = graph.concat %x, %x {axis = -1 : i64} : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x14xf32>
  %1, %2 = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 5>} : (tensor<3x7xf32>) -> (tensor<3x2xf32>, tensor<3x5xf32>)
  %3, %4, %5 = graph.split %e {sizes = array<i64: 1, 3, 3>} : (tensor<7x3xf32>) -> (tensor<1x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>)
  %6 = graph.gather %e, %ids : (tensor<7x3xf32>, tensor<2x3xi64>) -> tensor<2x3x3xf32>
  %7 = graph.gather %x, %ids {axis = 1 : i64} : (tensor<3x7xf32>, tensor<2x3xi64>) -> tensor<3x2x3xf32>
  %8 = graph.resize %img {sizes = array<i64: 1, 2, 7, 2>} : (tensor<1x2x3x5xf32>) -> tensor<1x2x7x2xf32>
  %9 = graph.resize %img {sizes = array<i64: 1, 2, 6, 10>, mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x2x3x5xf32>) -> tensor<1x2x6x10xf32>
  func.return
}

// Round trips of the blocked-layout ops (built by alter-op-layout): layout_transform
// both ways and for weights, conv2d_nchwc; custom -> print -> parse -> print and
// custom -> generic -> custom are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @blocked(%x: tensor<1x20x5x7xf32>, %w: tensor<24x20x3x3xf32>) -> tensor<1x24x5x7xf32> {
// CHECK-NEXT:  %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW16c"} : (tensor<1x20x5x7xf32>) -> tensor<1x2x5x7x16xf32>
// CHECK-NEXT:  %1 = graph.layout_transform %w {src = "OIHW", dst = "OIHW16i16o"} : (tensor<24x20x3x3xf32>) -> tensor<2x2x3x3x16x16xf32>
// CHECK-NEXT:  %2 = graph.conv2d_nchwc %0, %1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x7x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x5x7x16xf32>
// CHECK-NEXT:  %3 = graph.layout_transform %2 {src = "NCHW16c", dst = "NCHW", channels = 24 : i64} : (tensor<1x2x5x7x16xf32>) -> tensor<1x24x5x7xf32>
// CHECK-NEXT:  func.return %3 : tensor<1x24x5x7xf32>
func.func @blocked(%x: tensor<1x20x5x7xf32>, %w: tensor<24x20x3x3xf32>) -> tensor<1x24x5x7xf32> {
  %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW16c"} : (tensor<1x20x5x7xf32>) -> tensor<1x2x5x7x16xf32>
  %1 = graph.layout_transform %w {src = "OIHW", dst = "OIHW16i16o"} : (tensor<24x20x3x3xf32>) -> tensor<2x2x3x3x16x16xf32>
  %2 = graph.conv2d_nchwc %0, %1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x7x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x5x7x16xf32>
  %3 = graph.layout_transform %2 {src = "NCHW16c", dst = "NCHW", channels = 24 : i64} : (tensor<1x2x5x7x16xf32>) -> tensor<1x24x5x7xf32>
  func.return %3 : tensor<1x24x5x7xf32>
}

// A 3-channel image keeps a 3-channel block; the weight's input block follows it.
// CHECK-LABEL: func.func @small_block(%x: tensor<2x3x9x9xf32>, %w: tensor<2x1x3x3x3x16xf32>) -> tensor<2x2x4x4x16xf32> {
// CHECK-NEXT:  %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW3c"} : (tensor<2x3x9x9xf32>) -> tensor<2x1x9x9x3xf32>
// CHECK-NEXT:  %1 = graph.conv2d_nchwc %0, %w {strides = array<i64: 2, 2>} : (tensor<2x1x9x9x3xf32>, tensor<2x1x3x3x3x16xf32>) -> tensor<2x2x4x4x16xf32>
func.func @small_block(%x: tensor<2x3x9x9xf32>, %w: tensor<2x1x3x3x3x16xf32>) -> tensor<2x2x4x4x16xf32> {
  %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW3c"} : (tensor<2x3x9x9xf32>) -> tensor<2x1x9x9x3xf32>
  %1 = graph.conv2d_nchwc %0, %w {strides = array<i64: 2, 2>} : (tensor<2x1x9x9x3xf32>, tensor<2x1x3x3x3x16xf32>) -> tensor<2x2x4x4x16xf32>
  func.return %1 : tensor<2x2x4x4x16xf32>
}

// Blocked pools: the plain pools' attributes (no layout).
// CHECK-LABEL: func.func @pools(%x: tensor<1x2x9x9x16xf32>) -> tensor<1x2x4x4x16xf32> {
// CHECK-NEXT:  %0 = graph.max_pool2d_nchwc %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x2x9x9x16xf32>) -> tensor<1x2x5x5x16xf32>
// CHECK-NEXT:  %1 = graph.avg_pool2d_nchwc %0 {kernel = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x4x4x16xf32>
// CHECK-NEXT:  func.return %1 : tensor<1x2x4x4x16xf32>
func.func @pools(%x: tensor<1x2x9x9x16xf32>) -> tensor<1x2x4x4x16xf32> {
  %0 = graph.max_pool2d_nchwc %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x2x9x9x16xf32>) -> tensor<1x2x5x5x16xf32>
  %1 = graph.avg_pool2d_nchwc %0 {kernel = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x4x4x16xf32>
  func.return %1 : tensor<1x2x4x4x16xf32>
}

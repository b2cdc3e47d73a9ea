// Round trips of the neural-network ops (matmul, matmul_packed, dense, det, conv, 2-D and N-D pooling,
// normalization, softmax): custom -> print -> parse -> print, and custom -> generic ->
// custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @linear(%a: tensor<7x3xf32>, %b: tensor<3x5xf32>, %ba: tensor<2x1x3x5xf32>, %bb: tensor<7x5x11xf32>, %v: tensor<5xf32>, %x: tensor<4x16xf32>, %w: tensor<10x16xf32>, %bias: tensor<10xf32>) {
// CHECK-NEXT:  %0 = graph.matmul %a, %b : (tensor<7x3xf32>, tensor<3x5xf32>) -> tensor<7x5xf32>
// CHECK-NEXT:  %1 = graph.matmul %ba, %bb : (tensor<2x1x3x5xf32>, tensor<7x5x11xf32>) -> tensor<2x7x3x11xf32>
// CHECK-NEXT:  %2 = graph.matmul %b, %v : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3xf32>
// CHECK-NEXT:  %3 = graph.matmul %v, %v : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
// CHECK-NEXT:  %4 = graph.dense %x, %w, %bias : (tensor<4x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> tensor<4x10xf32>
// CHECK-NEXT:  %5 = graph.dense %x, %w : (tensor<4x16xf32>, tensor<10x16xf32>) -> tensor<4x10xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @linear(%a: tensor<7x3xf32>, %b: tensor<3x5xf32>, %ba: tensor<2x1x3x5xf32>, %bb: tensor<7x5x11xf32>, %v: tensor<5xf32>, %x: tensor<4x16xf32>, %w: tensor<10x16xf32>, %bias: tensor<10xf32>) {
  %0 = graph.matmul %a, %b : (tensor<7x3xf32>, tensor<3x5xf32>) -> tensor<7x5xf32>
  %1 = graph.matmul %ba, %bb : (tensor<2x1x3x5xf32>, tensor<7x5x11xf32>) -> tensor<2x7x3x11xf32>
  %2 = graph.matmul %b, %v : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3xf32>
  %3 = graph.matmul %v, %v : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
  %4 = graph.dense %x, %w, %bias : (tensor<4x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  %5 = graph.dense %x, %w : (tensor<4x16xf32>, tensor<10x16xf32>) -> tensor<4x10xf32>
  func.return
}

// CHECK-LABEL: func.func @packed(%a: tensor<1x7x5xf32>, %a2: tensor<4x5xf32>, %bp: tensor<2x5x3xf32>) {
// CHECK-NEXT:  %0 = graph.matmul_packed %a, %bp : (tensor<1x7x5xf32>, tensor<2x5x3xf32>) -> tensor<1x7x6xf32>
// CHECK-NEXT:  %1 = graph.matmul_packed %a2, %bp : (tensor<4x5xf32>, tensor<2x5x3xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @packed(%a: tensor<1x7x5xf32>, %a2: tensor<4x5xf32>, %bp: tensor<2x5x3xf32>) {
  %0 = graph.matmul_packed %a, %bp : (tensor<1x7x5xf32>, tensor<2x5x3xf32>) -> tensor<1x7x6xf32>
  %1 = graph.matmul_packed %a2, %bp : (tensor<4x5xf32>, tensor<2x5x3xf32>) -> tensor<4x6xf32>
  func.return
}

// CHECK-LABEL: func.func @conv(%x: tensor<2x6x11x9xf32>, %w: tensor<4x6x3x3xf32>, %wg: tensor<9x2x3x3xf32>, %xh: tensor<2x7x5x3xf32>, %wh: tensor<3x2x3x4xf32>, %xt: tensor<1x4x3x5xf32>, %wt: tensor<4x2x3x3xf32>) {
// CHECK-NEXT:  %0 = graph.conv2d %x, %w : (tensor<2x6x11x9xf32>, tensor<4x6x3x3xf32>) -> tensor<2x4x9x7xf32>
// CHECK-NEXT:  %1 = graph.conv2d %x, %w {strides = array<i64: 2, 3>, padding = array<i64: 1, 2, 0, 1>, dilations = array<i64: 2, 1>} : (tensor<2x6x11x9xf32>, tensor<4x6x3x3xf32>) -> tensor<2x4x4x4xf32>
// CHECK-NEXT:  %2 = graph.conv2d %x, %wg {groups = 3 : i64} : (tensor<2x6x11x9xf32>, tensor<9x2x3x3xf32>) -> tensor<2x9x9x7xf32>
// CHECK-NEXT:  %3 = graph.conv2d %xh, %wh {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<2x7x5x3xf32>, tensor<3x2x3x4xf32>) -> tensor<2x5x4x4xf32>
// CHECK-NEXT:  %4 = graph.conv_transpose2d %xt, %wt {strides = array<i64: 2, 2>, output_padding = array<i64: 1, 0>} : (tensor<1x4x3x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x8x11xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @conv(%x: tensor<2x6x11x9xf32>, %w: tensor<4x6x3x3xf32>, %wg: tensor<9x2x3x3xf32>, %xh: tensor<2x7x5x3xf32>, %wh: tensor<3x2x3x4xf32>, %xt: tensor<1x4x3x5xf32>, %wt: tensor<4x2x3x3xf32>) {
  %0 = graph.conv2d %x, %w : (tensor<2x6x11x9xf32>, tensor<4x6x3x3xf32>) -> tensor<2x4x9x7xf32>
  %1 = graph.conv2d %x, %w {strides = array<i64: 2, 3>, padding = array<i64: 1, 2, 0, 1>, dilations = array<i64: 2, 1>} : (tensor<2x6x11x9xf32>, tensor<4x6x3x3xf32>) -> tensor<2x4x4x4xf32>
  %2 = graph.conv2d %x, %wg {groups = 3 : i64} : (tensor<2x6x11x9xf32>, tensor<9x2x3x3xf32>) -> tensor<2x9x9x7xf32>
  %3 = graph.conv2d %xh, %wh {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<2x7x5x3xf32>, tensor<3x2x3x4xf32>) -> tensor<2x5x4x4xf32>
  %4 = graph.conv_transpose2d %xt, %wt {strides = array<i64: 2, 2>, output_padding = array<i64: 1, 0>} : (tensor<1x4x3x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x8x11xf32>
  func.return
}

// CHECK-LABEL: func.func @pool(%x: tensor<2x3x7x5xf32>, %n: tensor<2x7x5x3xf32>, %i: tensor<1x2x5x5xi32>) {
// CHECK-NEXT:  %0 = graph.max_pool2d %x {kernel = array<i64: 3, 2>} : (tensor<2x3x7x5xf32>) -> tensor<2x3x5x4xf32>
// CHECK-NEXT:  %1 = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<2x3x7x5xf32>) -> tensor<2x3x3x2xf32>
// CHECK-NEXT:  %2 = graph.max_pool2d %i {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xi32>) -> tensor<1x2x6x6xi32>
// CHECK-NEXT:  %3 = graph.avg_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = true} : (tensor<2x3x7x5xf32>) -> tensor<2x3x7x5xf32>
// CHECK-NEXT:  %4 = graph.avg_pool2d %n {kernel = array<i64: 2, 2>, layout = "NHWC"} : (tensor<2x7x5x3xf32>) -> tensor<2x6x4x3xf32>
// CHECK-NEXT:  %5 = graph.global_avg_pool %x : (tensor<2x3x7x5xf32>) -> tensor<2x3x1x1xf32>
// CHECK-NEXT:  %6 = graph.global_max_pool %n {layout = "NHWC"} : (tensor<2x7x5x3xf32>) -> tensor<2x1x1x3xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @pool(%x: tensor<2x3x7x5xf32>, %n: tensor<2x7x5x3xf32>, %i: tensor<1x2x5x5xi32>) {
  %0 = graph.max_pool2d %x {kernel = array<i64: 3, 2>} : (tensor<2x3x7x5xf32>) -> tensor<2x3x5x4xf32>
  %1 = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<2x3x7x5xf32>) -> tensor<2x3x3x2xf32>
  %2 = graph.max_pool2d %i {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xi32>) -> tensor<1x2x6x6xi32>
  %3 = graph.avg_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = true} : (tensor<2x3x7x5xf32>) -> tensor<2x3x7x5xf32>
  %4 = graph.avg_pool2d %n {kernel = array<i64: 2, 2>, layout = "NHWC"} : (tensor<2x7x5x3xf32>) -> tensor<2x6x4x3xf32>
  %5 = graph.global_avg_pool %x : (tensor<2x3x7x5xf32>) -> tensor<2x3x1x1xf32>
  %6 = graph.global_max_pool %n {layout = "NHWC"} : (tensor<2x7x5x3xf32>) -> tensor<2x1x1x3xf32>
  func.return
}

// CHECK-LABEL: func.func @norm(%x: tensor<2x3x5x7xf32>, %c: tensor<3xf32>, %l: tensor<2x5x7xf32>, %g: tensor<7xf32>, %g2: tensor<5x7xf32>) {
// CHECK-NEXT:  %0 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.000000e-03 : f32} : (tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5x7xf32>
// CHECK-NEXT:  %1 = graph.layer_norm %l, %g, %g : (tensor<2x5x7xf32>, tensor<7xf32>, tensor<7xf32>) -> tensor<2x5x7xf32>
// CHECK-NEXT:  %2 = graph.layer_norm %l, %g2, %g {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x5x7xf32>, tensor<5x7xf32>, tensor<7xf32>) -> tensor<2x5x7xf32>
// CHECK-NEXT:  %3 = graph.softmax %l : (tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
// CHECK-NEXT:  %4 = graph.log_softmax %l {axis = 0 : i64} : (tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @norm(%x: tensor<2x3x5x7xf32>, %c: tensor<3xf32>, %l: tensor<2x5x7xf32>, %g: tensor<7xf32>, %g2: tensor<5x7xf32>) {
  %0 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-03 : f32} : (tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5x7xf32>
  %1 = graph.layer_norm %l, %g, %g : (tensor<2x5x7xf32>, tensor<7xf32>, tensor<7xf32>) -> tensor<2x5x7xf32>
  %2 = graph.layer_norm %l, %g2, %g {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x5x7xf32>, tensor<5x7xf32>, tensor<7xf32>) -> tensor<2x5x7xf32>
  %3 = graph.softmax %l : (tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
  %4 = graph.log_softmax %l {axis = 0 : i64} : (tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
  func.return
}

// CHECK-LABEL: func.func @pools(%x: tensor<1x3x5x6x7xf32>, %y: tensor<2x1x7xf32>, %i: tensor<1x2x5x5xi32>) {
// CHECK-NEXT:  %0 = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x3x5x6x7xf32>) -> tensor<1x3x2x3x3xf32>
// CHECK-NEXT:  %1 = graph.avg_pool3d %x {kernel = array<i64: 3, 3, 3>, padding = array<i64: 1, 1, 1, 1, 1, 1>, count_include_pad = true, ceil_mode = true} : (tensor<1x3x5x6x7xf32>) -> tensor<1x3x5x6x7xf32>
// CHECK-NEXT:  %2, %3 = graph.max_pool_with_indices %y {kernel = array<i64: 3>, dilations = array<i64: 2>} : (tensor<2x1x7xf32>) -> (tensor<2x1x3xf32>, tensor<2x1x3xi64>)
// CHECK-NEXT:  %4, %5 = graph.max_pool_with_indices %i {kernel = array<i64: 2, 2>, storage_order = 1 : i64} : (tensor<1x2x5x5xi32>) -> (tensor<1x2x4x4xi32>, tensor<1x2x4x4xi64>)
// CHECK-NEXT:  func.return
func.func @pools(%x: tensor<1x3x5x6x7xf32>, %y: tensor<2x1x7xf32>, %i: tensor<1x2x5x5xi32>) {
  %0 = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x3x5x6x7xf32>) -> tensor<1x3x2x3x3xf32>
  %1 = graph.avg_pool3d %x {kernel = array<i64: 3, 3, 3>, padding = array<i64: 1, 1, 1, 1, 1, 1>, count_include_pad = true, ceil_mode = true} : (tensor<1x3x5x6x7xf32>) -> tensor<1x3x5x6x7xf32>
  %2, %3 = graph.max_pool_with_indices %y {kernel = array<i64: 3>, dilations = array<i64: 2>} : (tensor<2x1x7xf32>) -> (tensor<2x1x3xf32>, tensor<2x1x3xi64>)
  %4, %5 = graph.max_pool_with_indices %i {kernel = array<i64: 2, 2>, storage_order = 1 : i64} : (tensor<1x2x5x5xi32>) -> (tensor<1x2x4x4xi32>, tensor<1x2x4x4xi64>)
  func.return
}

// CHECK-LABEL: func.func @det(%x: tensor<3x3xf32>, %y: tensor<2x1x4x4xf64>) {
// CHECK-NEXT:  %0 = graph.det %x : (tensor<3x3xf32>) -> tensor<f32>
// CHECK-NEXT:  %1 = graph.det %y : (tensor<2x1x4x4xf64>) -> tensor<2x1xf64>
// CHECK-NEXT:  func.return
func.func @det(%x: tensor<3x3xf32>, %y: tensor<2x1x4x4xf64>) {
  %0 = graph.det %x : (tensor<3x3xf32>) -> tensor<f32>
  %1 = graph.det %y : (tensor<2x1x4x4xf64>) -> tensor<2x1xf64>
  func.return
}

// fuse-ops raises legalize's layer_norm expansion (reduce_mean, sub, mul, reduce_mean,
// add eps, rsqrt, mul, mul scale, add bias) back into graph.layer_norm: one kernel
// (lowering/kernels/layer_norm.py) instead of five; it keeps the epsilon and the first
// normalized axis. An intermediate read elsewhere keeps the expansion.
// RUN: dlc-opt %s --split-input-file -p fuse-ops | filecheck %s
// RUN: dlc-opt %s --split-input-file -p fuse-ops,lower-to-loops | filecheck %s --check-prefix=LOOPS

// CHECK-LABEL: func.func @last_axis
// CHECK-NEXT:    %y = graph.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    func.return %y
// LOOPS-LABEL: func.func @last_axis_0_layer_norm
// LOOPS:         %row_mean = memref.alloca() : memref<3xf32>
// LOOPS:         tloop.for %d0 = 0 to 3 {
// LOOPS:           tloop.for %r0 = 0 to 5 {
// LOOPS:           math.rsqrt
func.func @last_axis(%x: tensor<3x5xf32>, %g: tensor<5xf32>, %b: tensor<5xf32>) -> tensor<3x5xf32> {
  %m = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %d = graph.sub %x, %m : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %sq = graph.mul %d, %d : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %eps = graph.constant dense<1.000000e-05> : tensor<f32>
  %ve = graph.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %r = graph.rsqrt %ve : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %n = graph.mul %d, %r : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %s = graph.mul %n, %g : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %y = graph.add %s, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}

// -----

// two trailing axes (axis 1 of a rank-3 input), a 2-D scale
// CHECK-LABEL: func.func @two_axes
// CHECK-NEXT:    %y = graph.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x7xf32>, tensor<3x7xf32>, tensor<7xf32>) -> tensor<2x3x7xf32>
func.func @two_axes(%x: tensor<2x3x7xf32>, %g: tensor<3x7xf32>, %b: tensor<7xf32>) -> tensor<2x3x7xf32> {
  %m = graph.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x3x7xf32>) -> tensor<2x1x1xf32>
  %d = graph.sub %x, %m : (tensor<2x3x7xf32>, tensor<2x1x1xf32>) -> tensor<2x3x7xf32>
  %sq = graph.mul %d, %d : (tensor<2x3x7xf32>, tensor<2x3x7xf32>) -> tensor<2x3x7xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x3x7xf32>) -> tensor<2x1x1xf32>
  %eps = graph.constant dense<1.000000e-03> : tensor<f32>
  %ve = graph.add %v, %eps : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %r = graph.rsqrt %ve : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %n = graph.mul %d, %r : (tensor<2x3x7xf32>, tensor<2x1x1xf32>) -> tensor<2x3x7xf32>
  %s = graph.mul %n, %g : (tensor<2x3x7xf32>, tensor<3x7xf32>) -> tensor<2x3x7xf32>
  %y = graph.add %s, %b : (tensor<2x3x7xf32>, tensor<7xf32>) -> tensor<2x3x7xf32>
  func.return %y : tensor<2x3x7xf32>
}

// -----

// the centred value is also returned: the expansion stays
// CHECK-LABEL: func.func @shared_intermediate
// CHECK-NOT:     graph.layer_norm
// CHECK:         graph.rsqrt
func.func @shared_intermediate(%x: tensor<3x5xf32>, %g: tensor<5xf32>, %b: tensor<5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %m = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %d = graph.sub %x, %m : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %sq = graph.mul %d, %d : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %eps = graph.constant dense<1.000000e-05> : tensor<f32>
  %ve = graph.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %r = graph.rsqrt %ve : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %n = graph.mul %d, %r : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %s = graph.mul %n, %g : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %y = graph.add %s, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  func.return %y, %d : tensor<3x5xf32>, tensor<3x5xf32>
}

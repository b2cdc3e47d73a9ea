// The flat conv form without scratch where it needs none (kernels/conv.py): a 1x1 stride-1
// unpadded conv reads x through a [n, c, H * W] view; a window one column wide (WQ == OW)
// accumulates straight into a [n, o, OH * OW] view of the output, P = OH * OW exactly, with
// the fused epilogue applied in place. The schedule (schedule/defaults_conv.py) starts the
// register tiles at zero (no zero-fill nest), moves the epilogue into the tiles' write-back
// and computes the tail of P (49 = 3 * 16 + 1) as a whole tile over columns 33..48 that
// writes back only column 48.
// RUN: dlc-opt %s --split-input-file -p 'fuse-ops,lower-to-loops{flat-conv=true}' | filecheck %s
// RUN: dlc-opt %s --split-input-file -p 'fuse-ops,lower-to-loops{flat-conv=true},tloop-default-schedule' | filecheck %s --check-prefix=SCHED

func.func @pointwise(%x: tensor<1x16x7x7xf32>, %w: tensor<24x16x1x1xf32>, %b: tensor<1x24x1x1xf32>) -> tensor<1x24x7x7xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x16x7x7xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x7x7xf32>
  %z = graph.add %y, %b : (tensor<1x24x7x7xf32>, tensor<1x24x1x1xf32>) -> tensor<1x24x7x7xf32>
  %r = graph.relu %z : (tensor<1x24x7x7xf32>) -> tensor<1x24x7x7xf32>
  func.return %r : tensor<1x24x7x7xf32>
}
// CHECK-LABEL: func.func @pointwise_2_conv2d_add_relu(
// CHECK-NOT:     memref.alloc
// CHECK:         %xflat = memref.reinterpret_cast %x to offset: [0], sizes: [1, 16, 49], strides: [784, 49, 1]
// CHECK-NEXT:    %outflat = memref.reinterpret_cast %out to offset: [0], sizes: [1, 24, 49], strides: [1176, 49, 1]
// CHECK:         tloop.for %p = 0 to 49 {
// CHECK-NEXT:      memref.store %{{.*}}, %outflat[%n, %oc, %p]
// CHECK:             memref.load %xflat[%n, %ic, %p]
// CHECK:           arith.maximumf
// CHECK-NEXT:      memref.store %{{.*}}, %outflat[%n, %oc, %p]
// CHECK-NOT:     %out_n
// CHECK-NOT:     memref.dealloc
// CHECK:         func.return

// SCHED-LABEL: func.func @pointwise_2_conv2d_add_relu(
// SCHED-NOT:     memref.alloc(
// SCHED:         tloop.for %n_s1_po = 0 to 3 parallel {
// SCHED:           tloop.for %acc_d2 = 0 to 16 vectorized {
// SCHED-NOT:         memref.load
// SCHED:             memref.store %{{.*}}, %acc[
// SCHED-NEXT:      } {dlc.whole_vector}
// SCHED:           tloop.for %pi = 0 to 16 vectorized {
// SCHED:             memref.load %xflat
// SCHED:           tloop.for %acc_out_d2 = 0 to 16 vectorized {
// SCHED:             memref.load %extra0
// SCHED:             arith.maximumf
// SCHED-NEXT:        memref.store %{{.*}}, %outflat
// SCHED:         tloop.for %n_s1_t = 0 to 1 {
// SCHED:             tloop.for %po_t = 33 to 34 {
// SCHED:                 tloop.for %pi_t = 0 to 16 vectorized {
// SCHED:             tloop.for %acc_t_out_d2 = 15 to 16 {
// SCHED:               arith.maximumf
// SCHED-NEXT:          memref.store %{{.*}}, %outflat
// SCHED-NOT:     tloop.for
// SCHED:         func.return

// -----

// 1x1 stride 2: a compact strided copy of x (one phase plane), then the output in place
func.func @downsample(%x: tensor<1x8x9x9xf32>, %w: tensor<16x8x1x1xf32>) -> tensor<1x16x5x5xf32> {
  %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x8x9x9xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x5x5xf32>
  func.return %y : tensor<1x16x5x5xf32>
}
// CHECK-LABEL: func.func @downsample_0_conv2d(
// CHECK:         %xpad = memref.alloc() : memref<1x8x25xf32>
// CHECK-NEXT:    %outflat = memref.reinterpret_cast %out
// CHECK:         tloop.for %pad_r = 0 to 5 {
// CHECK-NEXT:      tloop.for %pad_q = 0 to 5 {
// CHECK:         tloop.for %p = 0 to 25 {
// CHECK-NOT:     %outpad
// CHECK:         memref.dealloc %xpad
// CHECK-NEXT:    func.return

// -----

// an extra broadcast along one plane axis only needs (oh, ow): the padded form with its copy-out
func.func @column_bias(%x: tensor<1x4x3x5xf32>, %w: tensor<8x4x1x1xf32>, %b: tensor<5xf32>) -> tensor<1x8x3x5xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x4x3x5xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x3x5xf32>
  %z = graph.add %y, %b : (tensor<1x8x3x5xf32>, tensor<5xf32>) -> tensor<1x8x3x5xf32>
  func.return %z : tensor<1x8x3x5xf32>
}
// CHECK-LABEL: func.func @column_bias_1_conv2d_add(
// CHECK:         %xpad = memref.alloc() : memref<1x4x20xf32>
// CHECK-NEXT:    %outpad = memref.alloc() : memref<1x8x16xf32>
// CHECK-NOT:     %outflat
// CHECK:         tloop.for %out_w = 0 to 5 {
// CHECK:           memref.load %extra0[%out_w]
// SCHED-LABEL: func.func @column_bias_1_conv2d_add(
// SCHED-NOT:     tloop.for %n = 0 to 1 {
// SCHED:         tloop.for %out_n

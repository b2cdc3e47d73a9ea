// The grouped and depthwise conv2d forms of kernels/conv_grouped.py (CPU flat conv
// form, lower-to-loops{flat-conv=true}) and their default schedules
// (schedule/defaults_conv_grouped.py).
// RUN: dlc-opt %s -p 'lower-to-loops{flat-conv=true}' | filecheck %s
// RUN: dlc-opt %s -p 'lower-to-loops{flat-conv=true},tloop-default-schedule{target="x86-64-v4"}' | filecheck %s --check-prefix=SCHED
// RUN: not dlc-opt %s -p 'lower-to-loops{flat-conv=1x}' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: dlc-opt: error: invalid options for pass 'lower-to-loops'
// BAD-NOT: Traceback

// 3 groups of 10 output channels (padded to 16 with zero weight rows), 5 input
// channels each, 3x3 padding 1 on 7 x 5: WQ = 7, P = 49 -> 64
func.func @grouped(%x: tensor<1x15x7x5xf32>, %w: tensor<30x5x3x3xf32>) -> tensor<1x30x7x5xf32> {
  %y = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 3 : i64} : (tensor<1x15x7x5xf32>, tensor<30x5x3x3xf32>) -> tensor<1x30x7x5xf32>
  func.return %y : tensor<1x30x7x5xf32>
}
// CHECK-LABEL: func.func @grouped_0_conv2d({{.*}} tloop.form = "conv2d.grouped"}
// CHECK:         %xpad = memref.alloc() : memref<1x15x84xf32>
// CHECK:         %wgroup = memref.alloc() : memref<3x16x5x3x3xf32>
// CHECK:         tloop.for %wpad_o = 0 to 16 {
// CHECK:           arith.cmpi slt, %wpad_o
// CHECK:           arith.select
// CHECK:         %outpad = memref.alloc() : memref<1x3x16x64xf32>
// CHECK:         tloop.for %n = 0 to 1 {
// CHECK-NEXT:      tloop.for %g = 0 to 3 {
// CHECK-NEXT:        tloop.for %oc = 0 to 16 {
// CHECK-NEXT:          tloop.for %p = 0 to 64 {
// CHECK:                 %[[BASE:.*]] = arith.muli %g, %{{.*}} : index
// CHECK:                 %[[IC:.*]] = arith.addi %[[BASE]], %ic : index
// CHECK-NEXT:            memref.load %xpad[%n, %[[IC]], %{{.*}}]
// CHECK-NEXT:            memref.load %wgroup[%g, %oc, %ic, %kh, %kw]
// CHECK:         tloop.for %out_c = 0 to 30 {
// CHECK:           arith.divui %out_c
// CHECK:           arith.remui %out_c

// SCHED-LABEL: func.func @grouped_0_conv2d(
// SCHED:         tloop.for %g_oco = 0 to 6 parallel {
// SCHED-NEXT:      %acc = memref.alloca() : memref<1x1x8x16xf32>
// SCHED:           tloop.for %po = 0 to 64 step 16 {
// SCHED:             tloop.for %ic = 0 to 5 {
// SCHED-NEXT:          tloop.for %kh = 0 to 3 {
// SCHED-NEXT:            tloop.for %kw = 0 to 3 {
// SCHED:                   tloop.for %oci = 0 to 8 unrolled {
// SCHED-NEXT:                tloop.for %pi = 0 to 16 vectorized {

// 3 groups of 80 output channels, 1x1 on 8 x 8: x read in place (64 columns), no
// weight copy (80 is a multiple of the 8-channel tile)
func.func @pointwise(%x: tensor<1x240x8x8xf32>, %w: tensor<240x80x1x1xf32>) -> tensor<1x240x8x8xf32> {
  %y = graph.conv2d %x, %w {groups = 3 : i64} : (tensor<1x240x8x8xf32>, tensor<240x80x1x1xf32>) -> tensor<1x240x8x8xf32>
  func.return %y : tensor<1x240x8x8xf32>
}
// CHECK-LABEL: func.func @pointwise_0_conv2d({{.*}} tloop.form = "conv2d.grouped"}
// CHECK-NOT:     %xpad
// CHECK:         %xflat = memref.reinterpret_cast %x
// CHECK-NEXT:    %wgroup = memref.reinterpret_cast %w
// CHECK:         tloop.for %out_p = 0 to 64 {

// depthwise, stride 2, on 9 x 9: per channel phase planes and an output row in
// private scratch; WQ = 5 + 2 // 2 = 6, P = 30 -> 32
func.func @depthwise(%x: tensor<1x17x9x9xf32>, %w: tensor<17x1x3x3xf32>) -> tensor<1x17x5x5xf32> {
  %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 17 : i64} : (tensor<1x17x9x9xf32>, tensor<17x1x3x3xf32>) -> tensor<1x17x5x5xf32>
  func.return %y : tensor<1x17x5x5xf32>
}
// CHECK-LABEL: func.func @depthwise_0_conv2d({{.*}} tloop.form = "conv2d.depthwise"}
// CHECK:         tloop.for %dw_n = 0 to 1 {
// CHECK-NEXT:      tloop.for %dw_c = 0 to 17 {
// CHECK-NEXT:        %xchan = memref.alloca() : memref<168xf32>
// CHECK-NEXT:        %row = memref.alloca() : memref<32xf32>
// CHECK:             tloop.for %pad_a = 0 to 2 {
// CHECK-NEXT:          tloop.for %pad_b = 0 to 2 {
// CHECK:             tloop.for %p = 0 to 32 {
// CHECK:                 memref.load %w[%dw_c, %{{.*}}, %kh, %kw]
// CHECK:             tloop.for %out_w = 0 to 5 {
// CHECK:               memref.store %{{.*}}, %out[%dw_n, %dw_c, %out_h, %out_w]

// SCHED-LABEL: func.func @depthwise_0_conv2d(
// SCHED:         tloop.for %dw_nc = 0 to 17 {
// SCHED:           tloop.for %po = 0 to 32 step 32 {
// SCHED:             tloop.for %kh = 0 to 3 {
// SCHED-NEXT:          tloop.for %kw = 0 to 3 {
// SCHED:                 tloop.for %pu = 0 to 32 step 16 unrolled {
// SCHED-NEXT:              tloop.for %pv = 0 to 16 vectorized {

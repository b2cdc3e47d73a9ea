// The CPU conv2d form of kernels/conv.py (lower-to-loops{flat-conv=true}; dlc.compile
// turns it on): zero-padded phase planes, a flattened padded-width accumulation whose
// window loads are stride 1 in %p, then a copy of the valid columns to the output.
// RUN: dlc-opt %s -p 'lower-to-loops{flat-conv=true}' | filecheck %s
// RUN: dlc-opt %s -p lower-to-loops | filecheck %s --check-prefix=DIRECT
// RUN: not dlc-opt %s -p 'lower-to-loops{flat-conv=maybe}' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: dlc-opt: error: invalid options for pass 'lower-to-loops'
// BAD-NOT: Traceback

// stride 2, 3x3, padding 1 on a 5 x 7 image: OH x OW = 3 x 4; phase planes of
// WQ = 4 + 2 // 2 = 5 columns and 5 rows (P = 16 columns of output read up to 21)
func.func @strided(%x: tensor<1x3x5x7xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x3x4xf32> {
  %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x5x7xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x3x4xf32>
  func.return %y : tensor<1x8x3x4xf32>
}
// CHECK-LABEL: func.func @strided_0_conv2d({{.*}} tloop.form = "conv2d.flat"}
// CHECK:         %xpad = memref.alloc() : memref<1x3x100xf32>
// CHECK-NEXT:    %outpad = memref.alloc() : memref<1x8x16xf32>
// CHECK:         tloop.for %pad_c = 0 to 3 {
// CHECK-NEXT:      tloop.for %pad_a = 0 to 2 {
// CHECK-NEXT:        tloop.for %pad_b = 0 to 2 {
// CHECK-NEXT:          tloop.for %pad_r = 0 to 5 {
// CHECK-NEXT:            tloop.for %pad_q = 0 to 5 {
// CHECK:                   arith.select
// CHECK:                   memref.store %{{.*}}, %xpad
// CHECK:         tloop.for %p = 0 to 16 {
// CHECK-NEXT:      memref.store %{{.*}}, %outpad[%n, %oc, %p]
// CHECK:           tloop.for %kw = 0 to 3 {
// CHECK:             arith.remui %kh
// CHECK:             %[[SRC:.*]] = arith.addi %p, %{{.*}} : index
// CHECK-NEXT:        memref.load %xpad[%n, %ic, %[[SRC]]]
// CHECK:         tloop.for %out_w = 0 to 4 {
// CHECK:           memref.load %outpad
// CHECK:           memref.store %{{.*}}, %out[%out_n, %out_c, %out_h, %out_w]
// CHECK:         memref.dealloc %xpad
// CHECK-NEXT:    memref.dealloc %outpad

// stride 1, groups 2: one plane (no phase loops); output channel oc reads input
// channels (oc // 4) * 2 + ic. 7 x 7 padded by 1: WQ = 9, P = 63 -> 64.
func.func @grouped(%x: tensor<1x4x7x7xf32>, %w: tensor<8x2x3x3xf32>) -> tensor<1x8x7x7xf32> {
  %y = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<1x4x7x7xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x7x7xf32>
  func.return %y : tensor<1x8x7x7xf32>
}
// CHECK-LABEL: func.func @grouped_0_conv2d({{.*}} tloop.form = "conv2d.flat"}
// CHECK:         %xpad = memref.alloc() : memref<1x4x90xf32>
// CHECK-NEXT:    %outpad = memref.alloc() : memref<1x8x64xf32>
// CHECK-NOT:     %pad_a
// CHECK:         tloop.for %pad_r = 0 to 10 {
// CHECK-NEXT:      tloop.for %pad_q = 0 to 9 {
// CHECK:         tloop.for %p = 0 to 64 {
// CHECK:           arith.divui %oc
// CHECK:           tloop.for %ic = 0 to 2 {

// without the option (dlc-opt, the GPU lowering): the direct form, no scratch
// DIRECT-LABEL: func.func @strided_0_conv2d(
// DIRECT-NOT:     memref.alloc
// DIRECT:         tloop.for %ow = 0 to 4 {
// DIRECT-LABEL: func.func @grouped_0_conv2d(
// DIRECT-NOT:     %xpad

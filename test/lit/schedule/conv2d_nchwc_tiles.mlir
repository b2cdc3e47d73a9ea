// The blocked conv's default schedule (lowering/schedule/defaults_nchwc.py):
// narrow rows (7 wide) take 7 columns x 2 output-channel blocks per register tile
// (ocbi unrolled inside the reduction), the parallel loop takes the rows too when the
// channel blocks are few, and the tile starts from zeros: no zero-fill nest of `out`
// before the parallel loop, no copy-in load of `out`.
// RUN: dlc-opt %s -p 'lower-to-loops,tloop-default-schedule{target="llvm -mcpu=skylake-avx512"}' | filecheck %s
// Wide rows (14), 8 channel blocks: with one zmm per block, 7 columns x 2 blocks per tile
// (each input broadcast feeds two FMAs), 4 block pairs x 3 rows parallel, no fill either.
// RUN: dlc-opt %s -p 'lower-to-loops,tloop-default-schedule{target="llvm -mcpu=skylake-avx512"}' | filecheck %s --check-prefix=WIDE
// With 16 ymm (AVX2) a 16-lane block is two registers: tiles of 4-6 outputs
// (Target.nchwc_tile_outputs), here 6 columns and a 1-column tail, one block each.
// RUN: dlc-opt %s -p 'lower-to-loops,tloop-default-schedule{target="llvm -mcpu=haswell"}' | filecheck %s --check-prefix=AVX2
// AVX2-LABEL: func.func @narrow_0_conv2d_nchwc
// AVX2:         tloop.for %ocb_s1_oh_s1 = 0 to 14 parallel {
// AVX2:           %acc = memref.alloca() : memref<1x1x1x6x16xf32>
// AVX2:           tloop.for %ic = 0 to 16 {
// AVX2-NEXT:        tloop.for %owi = 0 to 6 unrolled {
// AVX2-NEXT:          tloop.for %oc_s1 = 0 to 16 vectorized {
// AVX2:           tloop.for %owo_u = 6 to 7 {
// AVX2:             tloop.for %owi_u = 0 to 1 unrolled {

func.func @narrow(%x: tensor<1x1x7x7x16xf32>, %w: tensor<2x1x1x1x16x16xf32>) -> tensor<1x2x7x7x16xf32> {
  %y = graph.conv2d_nchwc %x, %w : (tensor<1x1x7x7x16xf32>, tensor<2x1x1x1x16x16xf32>) -> tensor<1x2x7x7x16xf32>
  func.return %y : tensor<1x2x7x7x16xf32>
}
// CHECK-LABEL: func.func @narrow_0_conv2d_nchwc
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT:     memref.store %[[ZERO]], %out
// CHECK:         tloop.for %ocbo_oh_s1 = 0 to 7 parallel {
// CHECK-NEXT:      %acc = memref.alloca() : memref<1x2x1x7x16xf32>
// CHECK:           tloop.for %acc_d4 = 0 to 16 vectorized {
// CHECK-NOT:         memref.load
// CHECK:             memref.store %[[ZERO]], %acc
// CHECK-NOT:       memref.load %out
// CHECK:           tloop.for %ic = 0 to 16 {
// CHECK-NEXT:        tloop.for %ocbi = 0 to 2 unrolled {
// CHECK-NEXT:          tloop.for %owi = 0 to 7 unrolled {
// CHECK-NEXT:            tloop.for %oc_s1 = 0 to 16 vectorized {
// CHECK:           memref.store %{{.*}}, %out

func.func @wide(%x: tensor<1x1x3x14x16xf32>, %w: tensor<8x1x1x1x16x16xf32>) -> tensor<1x8x3x14x16xf32> {
  %y = graph.conv2d_nchwc %x, %w : (tensor<1x1x3x14x16xf32>, tensor<8x1x1x1x16x16xf32>) -> tensor<1x8x3x14x16xf32>
  func.return %y : tensor<1x8x3x14x16xf32>
}
// WIDE-LABEL: func.func @wide_0_conv2d_nchwc
// WIDE-NOT:     memref.store %{{.*}}, %out
// WIDE:         tloop.for %ocbo_oh_s1 = 0 to 12 parallel {
// WIDE-NEXT:      %acc = memref.alloca() : memref<1x2x1x7x16xf32>
// WIDE:           tloop.for %owo = 0 to 14 step 7 {
// WIDE:           tloop.for %ic = 0 to 16 {
// WIDE-NEXT:        tloop.for %ocbi = 0 to 2 unrolled {
// WIDE-NEXT:          tloop.for %owi = 0 to 7 unrolled {
// WIDE-NEXT:            tloop.for %oc_s1 = 0 to 16 vectorized {
// The qconv2d_nchwc kernel form (kernels/quantized_nchwc.py) and its schedule
// (schedule/defaults_quantized.py): the register tile (2 output blocks x 8 pixels here,
// and a 1-pixel tail nest for the row of 9) unrolled, the 16-lane dot loop marked for vpdpbusd on a VNNI
// target; an AVX2 target (4 accumulators) a 1 block x 4 pixel tile, the loop marked for
// pmaddwd (weights of 100: vpmaddubsw could saturate) and the ic4 reduction kept rolled;
// x86-64-v2 the portable loop (no mark).
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="llvm -mcpu=skylake-avx512 -mattr=+avx512vnni"}' %s | filecheck %s --check-prefix=VNNI
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true int8-accumulators=4},tloop-default-schedule{target="x86-64-v3"}' %s | filecheck %s --check-prefix=AVX2
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true int8-accumulators=2},tloop-default-schedule{target="x86-64-v2"}' %s | filecheck %s --check-prefix=PORTABLE
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true int8-accumulators=4},tloop-default-schedule{target="x86-64-v3"},expand-math,plan-workspace,lower-to-llvm' %s | filecheck %s --check-prefix=LLVM-AVX2
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="llvm -mcpu=skylake-avx512 -mattr=+avx512vnni"},expand-math,plan-workspace,lower-to-llvm' %s | filecheck %s --check-prefix=LLVM

// VNNI:      func.func @main_{{[0-9]+}}_qconv2d_nchwc
// VNNI-SAME: tloop.form = "qconv2d_nchwc"
// VNNI:      tloop.for %ocbo_oh = 0 to 6 parallel
// VNNI:      memref.alloca() : memref<2x8x16xi32>
// VNNI:      tloop.for %z_l = 0 to 16 unrolled
// VNNI:      tloop.for %tb = 0 to 2 unrolled
// VNNI:      tloop.for %t = 0 to 8 unrolled
// VNNI:      tloop.for %nl = 0 to 16 {
// VNNI:      } {dlc.int8_dot = "vpdpbusd"}
// VNNI:      memref.alloca() : memref<2x8x16xi32>
// VNNI:      tloop.for %c_l = 0 to 16 unrolled
// VNNI:      tloop.for %o_l = 0 to 16 vectorized
// VNNI:      tloop.for %ocbo_u_oh_u = 0 to 6 parallel
// VNNI:      memref.alloca() : memref<2x1x16xi32>
// VNNI:      } {dlc.int8_dot = "vpdpbusd"}

// AVX2:      tloop.form = "qconv2d_nchwc", tloop.int8_weight_range = array<i64: 100, 100>
// AVX2:      memref.alloca() : memref<1x3x16xi32>
// AVX2:      tloop.for %ic4 = 0 to 4 {
// AVX2:      tloop.for %t = 0 to 3 unrolled
// AVX2:      } {dlc.int8_dot = "pmaddwd"}
// AVX2:      } {dlc.rolled}
// AVX2-NOT:  ocbo_u

// PORTABLE:      tloop.form = "qconv2d_nchwc"
// PORTABLE-NOT:  dlc.int8_dot

// LLVM-AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"({{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>

// LLVM:      llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
func.func @main(%x: tensor<1x2x5x11x16xui8>) -> tensor<1x4x3x9x16xui8> {
  %w = graph.constant dense<100> : tensor<60x20x3x3xi8>
  %y = graph.qconv2d_nchwc %x, %w {x_scale = array<f32: 0.1>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.2>, y_zero_point = array<i64: 7>} : (tensor<1x2x5x11x16xui8>, tensor<60x20x3x3xi8>) -> tensor<1x4x3x9x16xui8>
  func.return %y : tensor<1x4x3x9x16xui8>
}

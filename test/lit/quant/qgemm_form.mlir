// The qgemm kernel form (kernels/quantized_fast.py) and its schedule
// (schedule/defaults_quantized.py): a target with AVX512-VNNI gets the 16-lane dot loop
// marked for vpdpbusd; an AVX2 target keeps the portable loop (no mark).
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="llvm -mcpu=skylake-avx512 -mattr=+avx512vnni"}' %s | filecheck %s --check-prefix=VNNI
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="x86-64-v3"}' %s | filecheck %s --check-prefix=AVX2
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="llvm -mcpu=skylake-avx512 -mattr=+avx512vnni"},expand-math,plan-workspace,lower-to-llvm' %s | filecheck %s --check-prefix=LLVM

// VNNI:      func.func @main_{{[0-9]+}}_qdense
// VNNI-SAME: tloop.form = "qgemm"
// VNNI:      tloop.for %mo_nbo = 0 to 2 parallel
// VNNI:      memref.alloca() : memref<8x32xi32>
// VNNI:      tloop.for %mi = 0 to 8 unrolled
// VNNI:      tloop.for %nbi = 0 to 2 unrolled
// VNNI:      tloop.for %nl = 0 to 16 {
// VNNI:      } {dlc.int8_dot = "vpdpbusd"}

// AVX2:      tloop.form = "qgemm"
// AVX2-NOT:  dlc.int8_dot

// LLVM:      llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
func.func @main(%x: tensor<16x8xui8>) -> tensor<16x32xui8> {
  %w = graph.constant dense<3> : tensor<32x8xi8>
  %y = graph.qdense %x, %w {x_scale = array<f32: 0.1>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.2>, y_zero_point = array<i64: 7>} : (tensor<16x8xui8>, tensor<32x8xi8>) -> tensor<16x32xui8>
  func.return %y : tensor<16x32xui8>
}

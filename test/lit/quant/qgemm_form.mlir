// The qgemm kernel form (kernels/quantized_fast.py) and its schedule
// (schedule/defaults_quantized.py): a target with AVX512-VNNI gets the 8 x 2 register tile
// and the 16-lane dot loop marked for vpdpbusd; an AVX2 target (4 accumulators: 16 ymm)
// a 4 x 1 tile, the loop marked for pmaddubsw (the kernel states weights of 3: their byte
// pairs cannot saturate it; pmaddwd otherwise: qconv2d_nchwc_form.mlir) and the k4 loop
// kept rolled; a target with neither (x86-64-v2) keeps the portable loop (no mark). The
// kernel states its tile.
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="llvm -mcpu=skylake-avx512 -mattr=+avx512vnni"}' %s | filecheck %s --check-prefix=VNNI
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true int8-accumulators=4},tloop-default-schedule{target="x86-64-v3"}' %s | filecheck %s --check-prefix=AVX2
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true int8-accumulators=2},tloop-default-schedule{target="x86-64-v2"}' %s | filecheck %s --check-prefix=PORTABLE
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="llvm -mcpu=skylake-avx512 -mattr=+avx512vnni"},expand-math,plan-workspace,lower-to-llvm' %s | filecheck %s --check-prefix=LLVM
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true int8-accumulators=4},tloop-default-schedule{target="x86-64-v3"},expand-math,plan-workspace,lower-to-llvm' %s | filecheck %s --check-prefix=LLVM-AVX2
// RUN: not dlc-opt -p 'lower-to-loops{int8-accumulators=0}' %s 2>&1 | filecheck %s --check-prefix=BAD
// BAD: dlc-opt: error: invalid options for pass 'lower-to-loops': int8-accumulators must be in 1..64, got 0

// VNNI:      func.func @main_{{[0-9]+}}_qdense
// VNNI-SAME: tloop.form = "qgemm", tloop.qgemm_tile = array<i64: 8, 2>
// VNNI:      tloop.for %mo_nbo = 0 to 2 parallel
// VNNI:      memref.alloca() : memref<8x32xi32>
// VNNI:      tloop.for %mi = 0 to 8 unrolled
// VNNI:      tloop.for %nbi = 0 to 2 unrolled
// VNNI:      tloop.for %nl = 0 to 16 {
// VNNI:      } {dlc.int8_dot = "vpdpbusd"}
// VNNI-NOT:  dlc.rolled

// AVX2:      tloop.form = "qgemm", tloop.qgemm_tile = array<i64: 4, 1>, tloop.int8_weight_range = array<i64: 3, 3>
// AVX2:      tloop.for %mo_nbo = 0 to 8 parallel
// AVX2:      memref.alloca() : memref<4x16xi32>
// AVX2:      tloop.for %k4 = 0 to 2 {
// AVX2:      tloop.for %mi = 0 to 4 unrolled
// AVX2:      } {dlc.int8_dot = "pmaddubsw"}
// AVX2:      } {dlc.rolled}

// PORTABLE:      tloop.form = "qgemm", tloop.qgemm_tile = array<i64: 2, 1>
// PORTABLE-NOT:  dlc.int8_dot

// LLVM:      llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// LLVM-AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"({{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
// LLVM-AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"({{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
func.func @main(%x: tensor<16x8xui8>) -> tensor<16x32xui8> {
  %w = graph.constant dense<3> : tensor<32x8xi8>
  %y = graph.qdense %x, %w {x_scale = array<f32: 0.1>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.2>, y_zero_point = array<i64: 7>} : (tensor<16x8xui8>, tensor<32x8xi8>) -> tensor<16x32xui8>
  func.return %y : tensor<16x32xui8>
}

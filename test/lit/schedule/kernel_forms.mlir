// Kernel forms (lowering/kernels/forms.py): a kernel stamped tloop.form gets that form's
// default schedule, for the target of the pass option (a dlc.target string): the GEMM
// register tile is 8 x 32 with 32 zmm registers (AVX-512), 6 x 16 with 16 ymm; the tile's
// column loops of two whole vectors are marked dlc.whole_vector (no full unroll by LLVM).
// (kernel_forms_errors.mlir: the loud failures.)
// RUN: dlc-opt %s -p 'tloop-default-schedule{target="llvm -mcpu=skylake-avx512"}' | filecheck %s --check-prefix=AVX512
// RUN: dlc-opt %s -p 'tloop-default-schedule{target="llvm -mcpu=haswell"}' | filecheck %s --check-prefix=AVX2
// RUN: dlc-opt %s -p 'tloop-default-schedule{target="llvm -mcpu=haswell -mattr=+avx512f"}' | filecheck %s --check-prefix=AVX512
// RUN: dlc-opt %s | dlc-opt | filecheck %s --check-prefix=ROUNDTRIP

// AVX512-LABEL: func.func @mm
// AVX512: tloop.for %acc_d1 = 0 to 32 vectorized
// AVX512: } {dlc.whole_vector}
// AVX512: tloop.for %mr = 0 to 8 unrolled
// AVX512: tloop.for %nr = 0 to 32 vectorized
// AVX512: } {dlc.whole_vector}
// AVX512: tloop.for %acc_out_d1 = 0 to 32 vectorized
// AVX512: } {dlc.whole_vector}
// AVX2-LABEL: func.func @mm
// AVX2: tloop.for %mr = 0 to 6 unrolled
// AVX2: tloop.for %nr = 0 to 16 vectorized
// ROUNDTRIP: func.func @mm({{.*}}) attributes {tloop.kernel, tloop.source = "graph.matmul", tloop.form = "matmul"}

func.func @mm(%a: memref<48x64xf32>, %b: memref<64x64xf32>, %out: memref<48x64xf32>) attributes {tloop.kernel, tloop.source = "graph.matmul", tloop.form = "matmul"} {
  tloop.for %m = 0 to 48 {
    tloop.for %n = 0 to 64 {
      %z = arith.constant 0.000000e+00 : f32
      memref.store %z, %out[%m, %n] : memref<48x64xf32>
      tloop.for %k = 0 to 64 {
        %x = memref.load %a[%m, %k] : memref<48x64xf32>
        %y = memref.load %b[%k, %n] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = memref.load %out[%m, %n] : memref<48x64xf32>
        %t = arith.addf %s, %p : f32
        memref.store %t, %out[%m, %n] : memref<48x64xf32>
      }
    }
  }
  func.return
}


// expand-math: f32/f16 atan, asin, acos become arith polynomials (Cephes
// range reductions, branch-free with selects; asin/acos take a sqrt), so no
// libm call is left; f64 keeps its exact call.
// RUN: dlc-opt %s -p expand-math | filecheck %s
// RUN: dlc-opt %s -p expand-math,lower-to-llvm | filecheck %s --check-prefix=LLVM

builtin.module {
  func.func @k_0_trig(%x: memref<7xf32>, %h: memref<7xf16>, %y: memref<7xf32>, %yh: memref<7xf16>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 7 vectorized {
      %v = memref.load %x[%i] : memref<7xf32>
      %a = math.atan %v : f32
      %s = math.asin %a : f32
      %c = math.acos %s : f32
      memref.store %c, %y[%i] : memref<7xf32>
      %hv = memref.load %h[%i] : memref<7xf16>
      %ha = math.acos %hv : f16
      memref.store %ha, %yh[%i] : memref<7xf16>
    }
    func.return
  }
  func.func @k_1_f64(%d: memref<7xf64>, %yd: memref<7xf64>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 7 {
      %dv = memref.load %d[%i] : memref<7xf64>
      %da = math.acos %dv : f64
      memref.store %da, %yd[%i] : memref<7xf64>
    }
    func.return
  }
}

// CHECK-LABEL: func.func @k_0_trig
// CHECK-NOT:   math.atan
// CHECK-NOT:   math.asin
// CHECK-NOT:   math.acos {{.*}} : f32
// CHECK-NOT:   math.acos {{.*}} : f16
// atan: the range reduction divides, the pi/2 and pi/4 bases are selected
// CHECK:       arith.divf
// CHECK:       arith.constant 1.5707963{{.*}} : f32
// CHECK:       math.copysign
// asin/acos: sqrt((1 - |x|) / 2) above 0.5
// CHECK:       math.sqrt
// CHECK:       math.fma
// f16 is computed in f32 and rounded back
// CHECK:       arith.extf %{{.*}} : f16 to f32
// CHECK:       arith.truncf %{{.*}} : f32 to f16
// CHECK-LABEL: func.func @k_1_f64
// CHECK:       math.acos %{{.*}} : f64

// LLVM-NOT:    @atanf
// LLVM-NOT:    @asinf
// LLVM-NOT:    @acosf
// LLVM:        llvm.func @acos(f64) -> f64

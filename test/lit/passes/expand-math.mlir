// expand-math: f32/f16 exp, log, tanh, erf become arith polynomials (no libm call
// left, so LLVM can vectorize the loop); f64 keeps its exact call; fma=false
// uses a separate multiply and add.
// RUN: dlc-opt %s -p expand-math | filecheck %s
// RUN: dlc-opt %s -p 'expand-math{fma=false}' | filecheck %s --check-prefix=NOFMA
// RUN: dlc-opt %s -p expand-math,lower-to-llvm | filecheck %s --check-prefix=LLVM
// RUN: not dlc-opt %s -p 'expand-math{fused=true}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: dlc-opt: error: pass 'expand-math' has no option 'fused' (its options: fma, general-pow)
// OPTION-NOT: Traceback

builtin.module {
  func.func @k_0_math(%x: memref<7xf32>, %h: memref<7xf16>, %y: memref<7xf32>, %yh: memref<7xf16>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 7 vectorized {
      %v = memref.load %x[%i] : memref<7xf32>
      %e = math.exp %v : f32
      %l = math.log %e : f32
      %t = math.tanh %l : f32
      %f = math.erf %t : f32
      memref.store %f, %y[%i] : memref<7xf32>
      %hv = memref.load %h[%i] : memref<7xf16>
      %he = math.exp %hv : f16
      memref.store %he, %yh[%i] : memref<7xf16>
    }
    func.return
  }
  func.func @k_1_f64(%d: memref<7xf64>, %yd: memref<7xf64>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 7 {
      %dv = memref.load %d[%i] : memref<7xf64>
      %de = math.tanh %dv : f64
      memref.store %de, %yd[%i] : memref<7xf64>
    }
    func.return
  }
}

// CHECK-LABEL: func.func @k_0_math
// CHECK-NOT:   math.exp {{.*}} : f32
// CHECK-NOT:   math.log
// CHECK-NOT:   math.erf
// exp: rounding by adding 1.5 * 2^23, the ln2 split, 2^n from exponent bits
// CHECK:       %{{.*}} = arith.constant 0x4B400000 : f32
// CHECK:       math.fma
// CHECK:       arith.shli
// CHECK:       arith.bitcast %{{.*}} : i32 to f32
// log: mantissa and exponent from the bits
// CHECK:       arith.andi
// CHECK:       arith.ori
// tanh: both branches, one selected, the sign copied
// CHECK:       math.copysign
// erf: a rational function
// CHECK:       arith.divf
// CHECK:       memref.store %{{.*}}, %y[%i]
// f16 computes in f32
// CHECK:       arith.extf %{{.*}} : f16 to f32
// CHECK:       arith.truncf %{{.*}} : f32 to f16
// CHECK:       memref.store %{{.*}}, %yh[%i]
// f64 keeps the libm call
// CHECK-LABEL: func.func @k_1_f64
// CHECK:       math.tanh %{{.*}} : f64

// NOFMA-NOT:   math.fma
// NOFMA:       math.copysign

// LLVM-NOT:    @erff
// LLVM-NOT:    @tanhf
// LLVM:        dlc.loop = "vectorized"
// LLVM:        llvm.call @tanh(

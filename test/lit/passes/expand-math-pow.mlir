// expand-math{general-pow=true}: f32/f16 math.powf becomes exp(y log|x|) computed in
// f64 arith (log by the atanh series, exp by a Taylor polynomial, 2^n from exponent
// bits) plus the C99 special cases as selects, so no powf call is left and the loop
// vectorizes; f64 keeps its exact libm call. By default a run-time exponent keeps libm.
// RUN: dlc-opt %s -p 'expand-math{general-pow=true}' | filecheck %s
// RUN: dlc-opt %s -p 'expand-math{general-pow=true},lower-to-llvm' | filecheck %s --check-prefix=LLVM
// RUN: dlc-opt %s -p expand-math | filecheck %s --check-prefix=DEFAULT
// RUN: not dlc-opt %s -p 'expand-math{general-pow=maybe}' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: dlc-opt: error: invalid options for pass 'expand-math'
// BAD-NOT: Traceback

builtin.module {
  func.func @k_0_pow(%x: memref<7xf32>, %e: memref<f32>, %h: memref<7xf16>, %y: memref<7xf32>, %yh: memref<7xf16>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 7 vectorized {
      %v = memref.load %x[%i] : memref<7xf32>
      %b = memref.load %e[] : memref<f32>
      %p = math.powf %v, %b : f32
      memref.store %p, %y[%i] : memref<7xf32>
      %hv = memref.load %h[%i] : memref<7xf16>
      %hp = math.powf %hv, %hv : f16
      memref.store %hp, %yh[%i] : memref<7xf16>
    }
    func.return
  }
  func.func @k_1_f64(%d: memref<7xf64>, %yd: memref<7xf64>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 7 {
      %dv = memref.load %d[%i] : memref<7xf64>
      %dp = math.powf %dv, %dv : f64
      memref.store %dp, %yd[%i] : memref<7xf64>
    }
    func.return
  }
}

// DEFAULT-LABEL: func.func @k_0_pow(
// DEFAULT:         %p = math.powf %v, %b : f32
// DEFAULT:         %hp = math.powf %hv, %hv : f16

// CHECK-LABEL: func.func @k_0_pow(
// CHECK-NOT:     math.powf
// CHECK:         %{{.*}} = arith.extf %{{.*}} : f32 to f64
// CHECK:         %{{.*}} = arith.divf %{{.*}}, %{{.*}} : f64
// CHECK:         %{{.*}} = math.roundeven %{{.*}} : f64
// CHECK:         %{{.*}} = arith.truncf %{{.*}} : f64 to f32
// CHECK:         %{{.*}} = math.copysign
// CHECK:         memref.store %{{.*}}, %y[%i] : memref<7xf32>
// CHECK:         arith.extf %hv : f16 to f32
// CHECK-NOT:     math.powf
// CHECK:         arith.truncf %{{.*}} : f32 to f16
// CHECK-LABEL: func.func @k_1_f64(
// CHECK:         %dp = math.powf %dv, %dv : f64

// LLVM-LABEL: llvm.func @k_0_pow(
// LLVM-NOT:     pow
// LLVM:         llvm.call_intrinsic "llvm.roundeven.f64"
// LLVM-NOT:     pow
// LLVM-LABEL: llvm.func @k_1_f64(
// LLVM:         llvm.call_intrinsic "llvm.pow.f64"

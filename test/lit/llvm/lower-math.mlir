// Scalar ops: math -> LLVM intrinsics or libm calls (erf -> erff, tanh -> tanh),
// no fast-math flags; casts xDSL's llvm dialect lacks use saturating intrinsics
// (fptosi/fptoui) or a signed conversion of the widened value (uitofp).
// RUN: dlc-opt %s -p lower-to-llvm | filecheck %s

builtin.module {
  func.func @k_0_math(%x: memref<3xf32>, %d: memref<3xf64>, %n: memref<3xi32>, %u: memref<3xi8>, %y: memref<3xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 3 {
      %v = memref.load %x[%i] : memref<3xf32>
      %w = memref.load %d[%i] : memref<3xf64>
      %k = memref.load %n[%i] : memref<3xi32>
      %b = memref.load %u[%i] : memref<3xi8>
      %e = math.exp %v : f32
      %l = math.log %e : f32
      %r = math.rsqrt %l : f32
      %t = math.tanh %w : f64
      %f = math.erf %r : f32
      %m = arith.maximumf %f, %v : f32
      %ms = arith.maxsi %k, %k : i32
      %fi = arith.fptosi %m : f32 to i32
      %s = arith.addi %fi, %ms : i32
      %sf = arith.sitofp %s : i32 to f32
      %bf = arith.uitofp %b : i8 to f32
      %tf = arith.truncf %t : f64 to f32
      %a = arith.addf %sf, %bf : f32
      %z = arith.addf %a, %tf : f32
      %c = arith.cmpf olt, %z, %v : f32
      %q = arith.select %c, %z, %v : f32
      memref.store %q, %y[%i] : memref<3xf32>
    }
    func.return
  }
}

// CHECK-LABEL: llvm.func @k_0_math(
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK:         %[[E:.*]] = llvm.call_intrinsic "llvm.exp.f32"(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:    %[[L:.*]] = llvm.call_intrinsic "llvm.log.f32"(%[[E]]) : (f32) -> f32
// CHECK-NEXT:    %[[SQ:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[L]]) : (f32) -> f32
// CHECK-NEXT:    %[[R:.*]] = llvm.fdiv %[[ONE]], %[[SQ]] : f32
// CHECK-NEXT:    %[[T:.*]] = llvm.call @tanh(%{{.*}}) : (f64) -> f64
// CHECK-NEXT:    %[[F:.*]] = llvm.call @erff(%[[R]]) : (f32) -> f32
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[F]], %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:    %[[GT:.*]] = llvm.icmp "sgt" %[[K:.*]], %[[K]] : i32
// CHECK-NEXT:    %[[MS:.*]] = llvm.select %[[GT]], %[[K]], %[[K]] : i1, i32
// CHECK-NEXT:    %[[FI:.*]] = llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"(%[[M]]) : (f32) -> i32
// CHECK-NEXT:    %[[S:.*]] = llvm.add %[[FI]], %[[MS]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.sitofp %[[S]] : i32 to f32
// CHECK-NEXT:    %[[WIDE:.*]] = llvm.zext %{{.*}} : i8 to i64
// CHECK-NEXT:    %{{.*}} = llvm.sitofp %[[WIDE]] : i64 to f32
// CHECK-NEXT:    %{{.*}} = llvm.fptrunc %[[T]] : f64 to f32
// CHECK:         llvm.fcmp "olt"
// CHECK-NEXT:    llvm.select
// CHECK-NOT:     fastmath
// CHECK-DAG:   llvm.func @tanh(f64) -> f64
// CHECK-DAG:   llvm.func @erff(f32) -> f32

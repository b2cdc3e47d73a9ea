// f64 -> f16 never becomes one `fptrunc double to half`: x86 has no such
// instruction and LLVM's __truncdfhf2 helper is not resolvable in the JIT (the
// compiled code hung). It rounds to f32 with round-to-odd (toward zero, then
// set the last bit when inexact) and then to f16; f32 -> f16 stays direct.
// RUN: dlc-opt %s -p lower-to-llvm | filecheck %s

builtin.module {
  func.func @k_0_cast(%x: memref<3xf64>, %s: memref<3xf32>, %y: memref<3xf16>, %z: memref<3xf16>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 3 {
      %v = memref.load %x[%i] : memref<3xf64>
      %h = arith.truncf %v : f64 to f16
      memref.store %h, %y[%i] : memref<3xf16>
      %w = memref.load %s[%i] : memref<3xf32>
      %g = arith.truncf %w : f32 to f16
      memref.store %g, %z[%i] : memref<3xf16>
    }
    func.return
  }
}

// CHECK-LABEL: llvm.func @k_0_cast
// CHECK:       %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f64
// CHECK-NOT:   llvm.fptrunc %[[V]] : f64 to f16
// CHECK:       %[[NEAREST:.*]] = llvm.fptrunc %[[V]] : f64 to f32
// CHECK:       llvm.fpext %[[NEAREST]] : f32 to f64
// CHECK:       llvm.bitcast %[[NEAREST]] : f32 to i32
// CHECK:       llvm.or
// CHECK:       %[[ODD:.*]] = llvm.bitcast %{{.*}} : i32 to f32
// CHECK:       %[[H:.*]] = llvm.fptrunc %[[ODD]] : f32 to f16
// CHECK:       llvm.store %[[H]]
// CHECK:       %[[W:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK-NEXT:  llvm.fptrunc %[[W]] : f32 to f16

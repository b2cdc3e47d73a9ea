// lower-to-llvm of a schedule's contracted accumulation: an addf of a mulf, both
// `contract`, the product used only there, becomes llvm.fmuladd (one rounding wherever
// the target has FMA, also in loop remainders the SLP vectorizer repacks). Without the
// flag on both, or with a second use of the product, the two roundings stay.
// RUN: dlc-opt %s -p lower-to-llvm | filecheck %s
// RUN: dlc-opt %s -p lower-to-llvm | dlc-opt | filecheck %s --check-prefix=ROUNDTRIP

builtin.module {
  func.func @k_0_matmul(%a: memref<3xf32>, %b: memref<3xf32>, %out: memref<3xf32>) attributes {tloop.kernel, tloop.source = "graph.matmul"} {
    tloop.for %i = 0 to 3 vectorized {
      %x = memref.load %a[%i] : memref<3xf32>
      %y = memref.load %b[%i] : memref<3xf32>
      %c = memref.load %out[%i] : memref<3xf32>
      %p = arith.mulf %x, %y fastmath<contract> : f32
      %s = arith.addf %c, %p fastmath<contract> : f32
      memref.store %s, %out[%i] : memref<3xf32>
    }
    func.return
  }
  func.func @k_1_epilogue(%a: memref<3xf32>, %b: memref<3xf32>, %out: memref<3xf32>) attributes {tloop.kernel, tloop.source = "graph.mul"} {
    tloop.for %i = 0 to 3 {
      %x = memref.load %a[%i] : memref<3xf32>
      %y = memref.load %b[%i] : memref<3xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %p, %y fastmath<contract> : f32
      %p2 = arith.mulf %x, %y fastmath<contract> : f32
      %s2 = arith.addf %p2, %x fastmath<contract> : f32
      %t = arith.addf %s, %p2 : f32
      %u = arith.addf %t, %s2 : f32
      memref.store %u, %out[%i] : memref<3xf32>
    }
    func.return
  }
}

// CHECK-LABEL: llvm.func @k_0_matmul
// CHECK:         %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         %[[Y:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         %[[C:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         %[[S:.*]] = llvm.call_intrinsic "llvm.fmuladd.f32"(%[[X]], %[[Y]], %[[C]]) : (f32, f32, f32) -> f32
// CHECK:         llvm.store %[[S]], %{{.*}} : f32, !llvm.ptr

// the product without `contract`, and one with a second use: fmul then fadd
// CHECK-LABEL: llvm.func @k_1_epilogue
// CHECK-NOT:     llvm.fmuladd
// CHECK:         llvm.fmul %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK-NOT:     llvm.fmuladd
// CHECK:         llvm.return

// ROUNDTRIP: llvm.call_intrinsic "llvm.fmuladd.f32"

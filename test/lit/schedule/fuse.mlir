// tloop-fuse: one loop over i*j iterations; i and j come back by div/mod.
// RUN: dlc-opt %s -p 'tloop-fuse{kernel="mma" outer="i" inner="j"}' | filecheck %s
// RUN: dlc-opt %s -p 'tloop-fuse{kernel="mma" outer="i" inner="j"},tloop-parallel{kernel="mma" loop="i_j_fused"}' | filecheck %s --check-prefix=PAR

func.func @mma(%a: memref<6x5xf32>, %b: memref<5x11xf32>, %c: memref<6x11xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 6 {
    tloop.for %j = 0 to 11 {
      tloop.for %k = 0 to 5 {
        %x = memref.load %a[%i, %k] : memref<6x5xf32>
        %y = memref.load %b[%k, %j] : memref<5x11xf32>
        %acc = memref.load %c[%i, %j] : memref<6x11xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %m : f32
        memref.store %s, %c[%i, %j] : memref<6x11xf32>
      }
    }
  }
  func.return
}

// CHECK:      tloop.for %i_j_fused = 0 to 66 {
// CHECK-NEXT:   %[[N:.*]] = arith.constant 11 : index
// CHECK-NEXT:   %i = arith.divui %i_j_fused, %[[N]] : index
// CHECK-NEXT:   %j = arith.remui %i_j_fused, %[[N]] : index
// CHECK-NEXT:   tloop.for %k = 0 to 5 {

// PAR: tloop.for %i_j_fused = 0 to 66 parallel {

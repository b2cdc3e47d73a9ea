// tloop-fuse-siblings: producer loop i and consumer loop j touch %t only at the same
// index, so the consumer body joins the producer loop.
// RUN: dlc-opt %s -p 'tloop-fuse-siblings{kernel="sib" first="i" second="j"}' | filecheck %s
func.func @sib(%x: memref<13xf32>, %out: memref<13xf32>) attributes {tloop.kernel} {
  %t = memref.alloca() : memref<13xf32>
  tloop.for %i = 0 to 13 {
    %v = memref.load %x[%i] : memref<13xf32>
    %e = math.exp %v : f32
    memref.store %e, %t[%i] : memref<13xf32>
  }
  tloop.for %j = 0 to 13 {
    %v = memref.load %t[%j] : memref<13xf32>
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %v, %two : f32
    memref.store %m, %out[%j] : memref<13xf32>
  }
  func.return
}

// CHECK:      tloop.for %i = 0 to 13 {
// CHECK-NEXT:   %v = memref.load %x[%i] : memref<13xf32>
// CHECK-NEXT:   %e = math.exp %v : f32
// CHECK-NEXT:   memref.store %e, %t[%i] : memref<13xf32>
// CHECK-NEXT:   %[[V:.*]] = memref.load %t[%i] : memref<13xf32>
// CHECK:        memref.store %m, %out[%i] : memref<13xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return

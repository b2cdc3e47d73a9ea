// tloop-reorder: every order of a perfect matmul nest that accumulates in memory is legal
// (the only reduction loop, k, keeps its relative order).
// RUN: dlc-opt %s -p 'tloop-reorder{kernel="mma" order=k,i,j}' | filecheck %s
// RUN: dlc-opt %s -p 'tloop-reorder{kernel="mma" order=j,i}' | filecheck %s --check-prefix=SWAP

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

// CHECK:      tloop.for %k = 0 to 5 {
// CHECK-NEXT:   tloop.for %i = 0 to 6 {
// CHECK-NEXT:     tloop.for %j = 0 to 11 {
// CHECK-NEXT:       %x = memref.load %a[%i, %k] : memref<6x5xf32>

// SWAP:      tloop.for %j = 0 to 11 {
// SWAP-NEXT:   tloop.for %i = 0 to 6 {
// SWAP-NEXT:     tloop.for %k = 0 to 5 {

// tloop-tile: split both loops, then order (i_outer, j_outer, i_inner, j_inner); the
// guard of the non-dividing split of j is sunk into the innermost tile loop.
// RUN: dlc-opt %s -p 'tloop-tile{kernel="mma" outer="i" inner="j" outer-factor=2 inner-factor=4}' | filecheck %s

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

// CHECK:      tloop.for %i_outer = 0 to 6 step 2 {
// CHECK-NEXT:   tloop.for %j_outer = 0 to 11 step 4 {
// CHECK-NEXT:     tloop.for %i_inner = 0 to 2 {
// CHECK-NEXT:       tloop.for %j_inner = 0 to 4 {
// CHECK-NEXT:         %i = arith.addi %i_outer, %i_inner : index
// CHECK-NEXT:         %j = arith.addi %j_outer, %j_inner : index
// CHECK-NEXT:         %[[UB:.*]] = arith.constant 11 : index
// CHECK-NEXT:         %[[IN:.*]] = arith.cmpi slt, %j, %[[UB]] : index
// CHECK-NEXT:         scf.if %[[IN]] {
// CHECK-NEXT:           tloop.for %k = 0 to 5 {
// CHECK-NEXT:             %x = memref.load %a[%i, %k]

// tloop-split: a dividing factor gives a plain nest; a non-dividing one guards the body.
// RUN: dlc-opt %s -p 'tloop-split{kernel="scale" loop="i" factor=3}' | filecheck %s --check-prefix=DIV
// RUN: dlc-opt %s -p 'tloop-split{kernel="scale" loop="i" factor=4}' | filecheck %s --check-prefix=GUARD
// RUN: dlc-opt %s -p 'tloop-split{kernel="scale" loop="i" factor=4}' | dlc-opt | filecheck %s --check-prefix=GUARD

func.func @scale(%x: memref<9xf32>, %y: memref<9xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 9 vectorized {
    %v = memref.load %x[%i] : memref<9xf32>
    %r = arith.addf %v, %v : f32
    memref.store %r, %y[%i] : memref<9xf32>
  }
  func.return
}

// DIV:      tloop.for %i_outer = 0 to 9 step 3 {
// DIV-NEXT:   tloop.for %i_inner = 0 to 3 vectorized {
// DIV-NEXT:     %i = arith.addi %i_outer, %i_inner : index
// DIV-NEXT:     %v = memref.load %x[%i] : memref<9xf32>
// DIV-NOT:  scf.if

// GUARD:      tloop.for %i_outer = 0 to 9 step 4 {
// GUARD-NEXT:   tloop.for %i_inner = 0 to 4 vectorized {
// GUARD-NEXT:     %i = arith.addi %i_outer, %i_inner : index
// GUARD-NEXT:     %[[UB:.*]] = arith.constant 9 : index
// GUARD-NEXT:     %[[IN:.*]] = arith.cmpi slt, %i, %[[UB]] : index
// GUARD-NEXT:     scf.if %[[IN]] {
// GUARD-NEXT:       %v = memref.load %x[%i] : memref<9xf32>

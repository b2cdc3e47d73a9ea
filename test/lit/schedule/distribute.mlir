// tloop-distribute: the zero-fill of %c and its accumulation loop become two loops
// (then the accumulation nest is perfect and can be reordered).
// RUN: dlc-opt %s -p 'tloop-distribute{kernel="rowsum" loop="i"},tloop-reorder{kernel="rowsum" order=j,i_s1}' | filecheck %s
// A load of %c[i + 1] by the second statement would see values of later iterations: refused.
// RUN: not dlc-opt %s -p 'tloop-distribute{kernel="shifted" loop="i"}' 2>&1 | filecheck %s --check-prefix=DEPENDENCE
// RUN: not dlc-opt %s -p 'tloop-distribute{kernel="rowsum" loop="j"}' 2>&1 | filecheck %s --check-prefix=ONE
func.func @rowsum(%a: memref<7x5xf32>, %c: memref<7xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 7 {
    %z = arith.constant 0.0 : f32
    memref.store %z, %c[%i] : memref<7xf32>
    tloop.for %j = 0 to 5 {
      %x = memref.load %a[%i, %j] : memref<7x5xf32>
      %s = memref.load %c[%i] : memref<7xf32>
      %t = arith.addf %s, %x : f32
      memref.store %t, %c[%i] : memref<7xf32>
    }
  }
  func.return
}

func.func @shifted(%a: memref<8xf32>, %c: memref<8xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 7 {
    %x = memref.load %a[%i] : memref<8xf32>
    memref.store %x, %c[%i] : memref<8xf32>
    %one = arith.constant 1 : index
    %n = arith.addi %i, %one : index
    %y = memref.load %c[%n] : memref<8xf32>
    memref.store %y, %a[%i] : memref<8xf32>
  }
  func.return
}

// CHECK:      func.func @rowsum
// CHECK:        tloop.for %i = 0 to 7 {
// CHECK-NEXT:     %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     memref.store %z, %c[%i] : memref<7xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   tloop.for %j = 0 to 5 {
// CHECK-NEXT:     tloop.for %i_s1 = 0 to 7 {
// CHECK-NEXT:       %x = memref.load %a[%i_s1, %j] : memref<7x5xf32>
// CHECK-NEXT:       %s = memref.load %c[%i_s1] : memref<7xf32>

// DEPENDENCE: distribute.mlir:[[# @LINE - 21]]:3: error: pass 'tloop-distribute' failed: @shifted, loop 'i': cannot distribute: %c is written by one statement and used by another at elements of other iterations
// ONE: error: pass 'tloop-distribute' failed: @rowsum, loop 'j': cannot distribute: its body has fewer than two statements

// tloop-distribute over a loop whose elements are c[4 * p + r], r an inner loop: the inner
// part spans less than one step of 4 * p, so equal elements are equal iterations of p
// (a panel's columns, graph.matmul_packed). With r < 5 a p iteration reaches into the
// next panel's elements: refused.
// RUN: dlc-opt %s -p 'tloop-distribute{kernel="panels" loop="p"}' | filecheck %s
// RUN: not dlc-opt %s -p 'tloop-distribute{kernel="overlap" loop="p"}' 2>&1 | filecheck %s --check-prefix=OVERLAP
func.func @panels(%a: memref<3x4xf32>, %c: memref<12xf32>) attributes {tloop.kernel} {
  %four = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  tloop.for %p = 0 to 3 {
    tloop.for %r = 0 to 4 {
      %base = arith.muli %p, %four : index
      %e = arith.addi %base, %r : index
      memref.store %z, %c[%e] : memref<12xf32>
    }
    tloop.for %r2 = 0 to 4 {
      %base2 = arith.muli %p, %four : index
      %e2 = arith.addi %base2, %r2 : index
      %x = memref.load %a[%p, %r2] : memref<3x4xf32>
      %s = memref.load %c[%e2] : memref<12xf32>
      %t = arith.addf %s, %x : f32
      memref.store %t, %c[%e2] : memref<12xf32>
    }
  }
  func.return
}

func.func @overlap(%a: memref<3x5xf32>, %c: memref<13xf32>) attributes {tloop.kernel} {
  %four = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  tloop.for %p = 0 to 3 {
    tloop.for %r = 0 to 5 {
      %base = arith.muli %p, %four : index
      %e = arith.addi %base, %r : index
      memref.store %z, %c[%e] : memref<13xf32>
    }
    tloop.for %r2 = 0 to 5 {
      %base2 = arith.muli %p, %four : index
      %e2 = arith.addi %base2, %r2 : index
      %x = memref.load %a[%p, %r2] : memref<3x5xf32>
      %s = memref.load %c[%e2] : memref<13xf32>
      %t = arith.addf %s, %x : f32
      memref.store %t, %c[%e2] : memref<13xf32>
    }
  }
  func.return
}

// CHECK:      func.func @panels
// CHECK:        tloop.for %p = 0 to 3 {
// CHECK-NEXT:     tloop.for %r = 0 to 4 {
// CHECK:          memref.store %z, %c
// CHECK:        tloop.for %p_s1 = 0 to 3 {
// CHECK-NEXT:     tloop.for %r2 = 0 to 4 {

// OVERLAP: error: pass 'tloop-distribute' failed: @overlap, loop 'p': cannot distribute: %c is written by one statement and used by another at elements of other iterations

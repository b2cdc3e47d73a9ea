// tloop-split-range: [0, 13) -> [0, 8) and [8, 13); the copy's inner loop is renamed.
// RUN: dlc-opt %s -p 'tloop-split-range{kernel="mm" loop="i" at=8}' | filecheck %s
// RUN: not dlc-opt %s -p 'tloop-split-range{kernel="mm" loop="i" at=13}' 2>&1 | filecheck %s --check-prefix=RANGE
func.func @mm(%a: memref<13x3xf32>, %c: memref<13xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 13 {
    tloop.for %j = 0 to 3 {
      %x = memref.load %a[%i, %j] : memref<13x3xf32>
      memref.store %x, %c[%i] : memref<13xf32>
    }
  }
  func.return
}

// CHECK:      tloop.for %i = 0 to 8 {
// CHECK-NEXT:   tloop.for %j = 0 to 3 {
// CHECK-NEXT:     %x = memref.load %a[%i, %j] : memref<13x3xf32>
// CHECK:      tloop.for %i_t = 8 to 13 {
// CHECK-NEXT:   tloop.for %j_t = 0 to 3 {
// CHECK-NEXT:     %{{.*}} = memref.load %a[%i_t, %j_t] : memref<13x3xf32>

// RANGE: split_range.mlir:[[# @LINE - 16]]:3: error: pass 'tloop-split-range' failed: @mm, loop 'i': split_range point 13 must lie strictly inside 0 to 13 on a step-1 iteration

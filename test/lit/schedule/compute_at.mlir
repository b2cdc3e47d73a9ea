// tloop-compute-at: the producer nest of %t moves into the consumer loop %i and computes
// only the 2x5 tile of %t that one iteration of %i reads (rows i and i + 1); the tile
// provably stays inside %t, so no guard.
// RUN: dlc-opt %s -p 'tloop-compute-at{kernel="stencil" producer="p" consumer="i"}' | filecheck %s
// RUN: not dlc-opt %s -p 'tloop-compute-at{kernel="stencil" producer="i" consumer="p"}' 2>&1 | filecheck %s --check-prefix=ORDER

func.func @stencil(%x: memref<7x5xf32>, %out: memref<6x5xf32>) attributes {tloop.kernel} {
  %t = memref.alloca() : memref<7x5xf32>
  tloop.for %p = 0 to 7 {
    tloop.for %q = 0 to 5 {
      %v = memref.load %x[%p, %q] : memref<7x5xf32>
      %two = arith.constant 2.0 : f32
      %d = arith.mulf %v, %two : f32
      memref.store %d, %t[%p, %q] : memref<7x5xf32>
    }
  }
  tloop.for %i = 0 to 6 {
    tloop.for %j = 0 to 5 {
      %one = arith.constant 1 : index
      %i1 = arith.addi %i, %one : index
      %a = memref.load %t[%i, %j] : memref<7x5xf32>
      %b = memref.load %t[%i1, %j] : memref<7x5xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%i, %j] : memref<6x5xf32>
    }
  }
  func.return
}

// CHECK:      %t = memref.alloca() : memref<7x5xf32>
// CHECK-NEXT: tloop.for %i = 0 to 6 {
// CHECK:        tloop.for %p = 0 to 2 {
// CHECK-NEXT:     tloop.for %q = 0 to 5 {
// CHECK:            %[[ROW:.*]] = arith.addi %i, %p : index
// CHECK-NEXT:       %[[COL:.*]] = arith.addi %{{.*}}, %q : index
// CHECK-NEXT:       %v = memref.load %x[%[[ROW]], %[[COL]]] : memref<7x5xf32>
// CHECK:            memref.store %d, %t[%[[ROW]], %[[COL]]] : memref<7x5xf32>
// CHECK:        tloop.for %j = 0 to 5 {
// CHECK-NOT:  tloop.for %p

// ORDER: error: pass 'tloop-compute-at' failed: @stencil, loop 'p': compute_at: it does not come after the producer nest 'i'

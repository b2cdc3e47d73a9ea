// tloop-default-schedule: outermost disjoint-output loops parallel, innermost stride-1
// non-reduction loops vectorized, nothing else.
// (min-parallel-iterations=1: these kernels are tiny; by default a nest needs
// 16384 innermost iterations before waking threads pays, see below.)
// RUN: dlc-opt %s -p 'tloop-default-schedule{min-parallel-iterations=1}' | filecheck %s
// RUN: dlc-opt %s -p tloop-default-schedule | filecheck %s --check-prefix=TINY
// TINY-LABEL: func.func @badd
// TINY: tloop.for %i = 0 to 7 {
// TINY-NEXT: tloop.for %j = 0 to 11 vectorized {

func.func @badd(%x: memref<7x1xf32>, %y: memref<11xf32>, %out: memref<7x11xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 7 {
    tloop.for %j = 0 to 11 {
      %c0 = arith.constant 0 : index
      %u = memref.load %x[%i, %c0] : memref<7x1xf32>
      %v = memref.load %y[%j] : memref<11xf32>
      %s = arith.addf %u, %v : f32
      memref.store %s, %out[%i, %j] : memref<7x11xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @badd
// CHECK:       tloop.for %i = 0 to 7 parallel {
// CHECK-NEXT:    tloop.for %j = 0 to 11 vectorized {

func.func @rsum(%x: memref<5x13xf32>, %out: memref<5xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 5 {
    %z = arith.constant 0.0 : f32
    memref.store %z, %out[%i] : memref<5xf32>
    tloop.for %r = 0 to 13 {
      %v = memref.load %x[%i, %r] : memref<5x13xf32>
      %acc = memref.load %out[%i] : memref<5xf32>
      %s = arith.addf %acc, %v : f32
      memref.store %s, %out[%i] : memref<5xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @rsum
// CHECK:       tloop.for %i = 0 to 5 parallel {
// CHECK:         tloop.for %r = 0 to 13 {

func.func @total(%x: memref<3xf32>, %out: memref<f32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 3 {
    %v = memref.load %x[%i] : memref<3xf32>
    %a = memref.load %out[] : memref<f32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %out[] : memref<f32>
  }
  func.return
}
// CHECK-LABEL: func.func @total
// CHECK:       tloop.for %i = 0 to 3 {

// tloop-parallel / tloop-vectorize: outermost loop with disjoint writes, innermost
// stride-1 loop; split first so the vectorized loop is a fixed-width chunk.
// RUN: dlc-opt %s -p 'tloop-parallel{kernel="mma" loop="i"}' | filecheck %s --check-prefix=PAR
// RUN: dlc-opt %s -p 'tloop-reorder{kernel="mma" order=k,j},tloop-split{kernel="mma" loop="j" factor=4},tloop-vectorize{kernel="mma" loop="j_inner"},tloop-parallel{kernel="mma" loop="i"}' | filecheck %s --check-prefix=VEC
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

// PAR:      tloop.for %i = 0 to 6 parallel {
// PAR-NEXT:   tloop.for %j = 0 to 11 {
// PAR-NEXT:     tloop.for %k = 0 to 5 {

// VEC:      tloop.for %i = 0 to 6 parallel {
// VEC-NEXT:   tloop.for %k = 0 to 5 {
// VEC-NEXT:     tloop.for %j_outer = 0 to 11 step 4 {
// VEC-NEXT:       tloop.for %j_inner = 0 to 4 vectorized {

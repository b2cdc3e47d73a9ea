// tloop-cache-read / tloop-cache-write: a tile staged in a kernel-local alloca.
// RUN: dlc-opt %s -p 'tloop-cache-read{kernel="mma" buffer="b" loop="i"}' | filecheck %s --check-prefix=READ
// RUN: dlc-opt %s -p 'tloop-cache-write{kernel="mma" buffer="c" loop="j"}' | filecheck %s --check-prefix=WRITE
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

// READ:      %b_i_cache = memref.alloca() : memref<5x11xf32>
// READ-NEXT: tloop.for %i = 0 to 6 {
// READ:        tloop.for %b_i_cache_d0 = 0 to 5 {
// READ-NEXT:     tloop.for %b_i_cache_d1 = 0 to 11 {
// READ:            memref.store %{{.*}}, %b_i_cache[%b_i_cache_d0, %b_i_cache_d1] : memref<5x11xf32>
// READ:        tloop.for %j = 0 to 11 {
// READ:          %y = memref.load %b_i_cache[%{{.*}}, %{{.*}}] : memref<5x11xf32>
// READ-NOT:      memref.load %b[

// WRITE:      %c_j_cache = memref.alloca() : memref<1x1xf32>
// WRITE:      tloop.for %c_j_cache_d0 = 0 to 1 {
// WRITE:      tloop.for %k = 0 to 5 {
// WRITE:        %acc = memref.load %c_j_cache
// WRITE:        memref.store %s, %c_j_cache
// WRITE:      tloop.for %c_j_cache_out_d0 = 0 to 1 {
// WRITE:        memref.store %{{.*}}, %c[%{{.*}}, %{{.*}}] : memref<6x11xf32>

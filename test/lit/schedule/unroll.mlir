// tloop-unroll: mark the loop, or (expand=true) copy its body once per iteration.
// RUN: dlc-opt %s -p 'tloop-unroll{kernel="mma" loop="k"}' | filecheck %s --check-prefix=MARK
// RUN: dlc-opt %s -p 'tloop-unroll{kernel="mma" loop="k" expand=true}' | filecheck %s --check-prefix=EXPAND
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

// MARK: tloop.for %k = 0 to 5 unrolled {

// EXPAND:      tloop.for %j = 0 to 11 {
// EXPAND-NEXT:   %[[K0:.*]] = arith.constant 0 : index
// EXPAND-NEXT:   %x = memref.load %a[%i, %[[K0]]] : memref<6x5xf32>
// EXPAND-COUNT-4: %{{.*}} = arith.constant {{[1-4]}} : index
// EXPAND-NOT:  tloop.for %k

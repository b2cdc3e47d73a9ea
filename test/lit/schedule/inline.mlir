// tloop-inline: the elementwise producer is recomputed at the consumer's loads; its
// call, kernel and intermediate buffer disappear, the consumer takes its inputs.
// RUN: dlc-opt %s -p 'tloop-inline{kernel="main_0_exp"}' | filecheck %s

func.func @main_0_exp(%x: memref<5x1xf32>, %t: memref<5x7xf32>) attributes {tloop.kernel, tloop.source = "graph.exp"} {
  tloop.for %i = 0 to 5 {
    tloop.for %j = 0 to 7 {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%i, %c0] : memref<5x1xf32>
      %e = math.exp %v : f32
      memref.store %e, %t[%i, %j] : memref<5x7xf32>
    }
  }
  func.return
}
func.func @main_1_add(%t: memref<5x7xf32>, %y: memref<7xf32>, %out: memref<5x7xf32>) attributes {tloop.kernel, tloop.source = "graph.add"} {
  tloop.for %i = 0 to 5 {
    tloop.for %j = 0 to 7 {
      %a = memref.load %t[%i, %j] : memref<5x7xf32>
      %b = memref.load %y[%j] : memref<7xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%i, %j] : memref<5x7xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<5x1xf32>, %y: memref<7xf32>, %out: memref<5x7xf32>) attributes {tloop.host, tloop.num_inputs = 2 : i64} {
  %t = memref.alloc() : memref<5x7xf32>
  func.call @main_0_exp(%x, %t) : (memref<5x1xf32>, memref<5x7xf32>) -> ()
  func.call @main_1_add(%t, %y, %out) : (memref<5x7xf32>, memref<7xf32>, memref<5x7xf32>) -> ()
  memref.dealloc %t : memref<5x7xf32>
  func.return
}

// CHECK-NOT:  @main_0_exp
// CHECK:      func.func @main_1_add(%x: memref<5x1xf32>, %y: memref<7xf32>, %out: memref<5x7xf32>)
// CHECK:        %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:   %[[V:.*]] = memref.load %x[%i, %[[C0]]] : memref<5x1xf32>
// CHECK-NEXT:   %[[E:.*]] = math.exp %[[V]] : f32
// CHECK-NEXT:   %b = memref.load %y[%j] : memref<7xf32>
// CHECK-NEXT:   %s = arith.addf %[[E]], %b : f32
// CHECK:      func.func @main(
// CHECK-NOT:    memref.alloc
// CHECK:        func.call @main_1_add(%x, %y, %out) : (memref<5x1xf32>, memref<7xf32>, memref<5x7xf32>) -> ()
// CHECK-NOT:    memref.dealloc

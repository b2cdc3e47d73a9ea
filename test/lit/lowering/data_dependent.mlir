// Kernels of the bounded-result ops: zero the bound, count, then fill the prefix of
// the true shape at data-dependent positions (a scratch slot keeps the running
// position). The default schedule vectorizes the zero fill and keeps the count and
// fill nests serial (their stores depend on the data).
// RUN: dlc-opt %s --split-input-file -p lower-to-loops,tloop-default-schedule | filecheck %s

// CHECK-LABEL: func.func @main_0_nonzero(%x: memref<3x5xf32>, %indices: memref<2x15xi64>, %count: memref<i64>)
// CHECK:         %flat = memref.reinterpret_cast %indices to offset: [0], sizes: [30], strides: [1]
// CHECK:         tloop.for %z = 0 to 30 vectorized {
// CHECK:         memref.store %{{.*}}, %count[] : memref<i64>
// CHECK-NEXT:    tloop.for %c0 = 0 to 3 {
// CHECK-NEXT:      tloop.for %c1 = 0 to 5 {
// CHECK:             arith.cmpf une
// CHECK:             scf.if
// CHECK:         %[[N:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:         %slot = memref.alloca() : memref<1xi64>
// CHECK:         tloop.for %f0 = 0 to 3 {
// CHECK-NEXT:      tloop.for %f1 = 0 to 5 {
// CHECK:             %[[J:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:             memref.store %{{.*}}, %flat[%[[J]]] : memref<30xi64>
// CHECK:             %[[AT:.*]] = arith.addi %[[N]], %[[J]] : index
// CHECK-NEXT:        memref.store %{{.*}}, %flat[%[[AT]]] : memref<30xi64>
func.func @main(%x: tensor<3x5xf32>) -> (tensor<2x15xi64>, tensor<i64>) {
  %0, %1 = graph.nonzero %x : (tensor<3x5xf32>) -> (tensor<2x15xi64>, tensor<i64>)
  func.return %0, %1 : tensor<2x15xi64>, tensor<i64>
}

// -----

// Compress along axis 1 of a 2x7x3 input, 5 condition entries: x seen as [pre, axis, post]
// = [2, 7, 3]; kept slice j of row p, element q, goes to (p * count + j) * 3 + q.
// CHECK-LABEL: func.func @main_0_compress(%x: memref<2x7x3xf32>, %condition: memref<5xi1>, %out: memref<2x5x3xf32>, %count: memref<i64>)
// CHECK:         %x3 = memref.reinterpret_cast %x to offset: [0], sizes: [2, 7, 3]
// CHECK:         %flat = memref.reinterpret_cast %out to offset: [0], sizes: [30]
// CHECK:         tloop.for %c = 0 to 5 {
// CHECK:         tloop.for %i = 0 to 5 {
// CHECK:           scf.if
// CHECK:             tloop.for %p = 0 to 2 {
// CHECK-NEXT:          tloop.for %q = 0 to 3 {
// CHECK:                 memref.load %x3[%p, %i, %q]
func.func @main(%x: tensor<2x7x3xf32>, %c: tensor<5xi1>) -> (tensor<2x5x3xf32>, tensor<i64>) {
  %0, %1 = graph.compress %x, %c {axis = 1 : i64} : (tensor<2x7x3xf32>, tensor<5xi1>) -> (tensor<2x5x3xf32>, tensor<i64>)
  func.return %0, %1 : tensor<2x5x3xf32>, tensor<i64>
}

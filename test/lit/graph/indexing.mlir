// Round trips of the indexing ops (gather_nd, scatter_nd, scatter_elements, top_k,
// reverse_sequence): custom -> print -> parse -> print, and custom -> generic -> custom,
// are exact; the inferred shapes verify.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @indexing(%x: tensor<2x5x3xf32>, %rows: tensor<2x4x1xi64>, %pairs: tensor<7x2xi32>, %u: tensor<7x3xf32>, %e: tensor<2x4x3xf32>, %i: tensor<2x4x3xi64>, %lens: tensor<2xi64>) {
// CHECK-NEXT:  %0 = graph.gather_nd %x, %rows {batch_dims = 1 : i64} : (tensor<2x5x3xf32>, tensor<2x4x1xi64>) -> tensor<2x4x3xf32>
// CHECK-NEXT:  %1 = graph.gather_nd %x, %pairs : (tensor<2x5x3xf32>, tensor<7x2xi32>) -> tensor<7x3xf32>
// CHECK-NEXT:  %2 = graph.scatter_nd %x, %pairs, %u {reduction = "mul"} : (tensor<2x5x3xf32>, tensor<7x2xi32>, tensor<7x3xf32>) -> tensor<2x5x3xf32>
// CHECK-NEXT:  %3 = graph.scatter_nd %x, %rows, %e {batch_dims = 1 : i64} : (tensor<2x5x3xf32>, tensor<2x4x1xi64>, tensor<2x4x3xf32>) -> tensor<2x5x3xf32>
// CHECK-NEXT:  %4 = graph.scatter_elements %x, %i, %e {axis = 1 : i64, reduction = "min"} : (tensor<2x5x3xf32>, tensor<2x4x3xi64>, tensor<2x4x3xf32>) -> tensor<2x5x3xf32>
// CHECK-NEXT:  %5, %6 = graph.top_k %x {k = 2 : i64, axis = 1 : i64, largest = false, sorted = true} : (tensor<2x5x3xf32>) -> (tensor<2x2x3xf32>, tensor<2x2x3xi64>)
// CHECK-NEXT:  %7, %8 = graph.top_k %x {k = 3 : i64} : (tensor<2x5x3xf32>) -> (tensor<2x5x3xf32>, tensor<2x5x3xi64>)
// CHECK-NEXT:  %9 = graph.reverse_sequence %x, %lens {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<2xi64>) -> tensor<2x5x3xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @indexing(%x: tensor<2x5x3xf32>, %rows: tensor<2x4x1xi64>, %pairs: tensor<7x2xi32>, %u: tensor<7x3xf32>, %e: tensor<2x4x3xf32>, %i: tensor<2x4x3xi64>, %lens: tensor<2xi64>) {
  %0 = graph.gather_nd %x, %rows {batch_dims = 1 : i64} : (tensor<2x5x3xf32>, tensor<2x4x1xi64>) -> tensor<2x4x3xf32>
  %1 = graph.gather_nd %x, %pairs : (tensor<2x5x3xf32>, tensor<7x2xi32>) -> tensor<7x3xf32>
  %2 = graph.scatter_nd %x, %pairs, %u {reduction = "mul"} : (tensor<2x5x3xf32>, tensor<7x2xi32>, tensor<7x3xf32>) -> tensor<2x5x3xf32>
  %3 = graph.scatter_nd %x, %rows, %e {batch_dims = 1 : i64} : (tensor<2x5x3xf32>, tensor<2x4x1xi64>, tensor<2x4x3xf32>) -> tensor<2x5x3xf32>
  %4 = graph.scatter_elements %x, %i, %e {axis = 1 : i64, reduction = "min"} : (tensor<2x5x3xf32>, tensor<2x4x3xi64>, tensor<2x4x3xf32>) -> tensor<2x5x3xf32>
  %5, %6 = graph.top_k %x {k = 2 : i64, axis = 1 : i64, largest = false, sorted = true} : (tensor<2x5x3xf32>) -> (tensor<2x2x3xf32>, tensor<2x2x3xi64>)
  %7, %8 = graph.top_k %x {k = 3 : i64} : (tensor<2x5x3xf32>) -> (tensor<2x5x3xf32>, tensor<2x5x3xi64>)
  %9 = graph.reverse_sequence %x, %lens {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<2xi64>) -> tensor<2x5x3xf32>
  func.return
}

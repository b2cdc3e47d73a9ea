// Round trips of the bounded-result ops (nonzero, compress): custom -> print -> parse ->
// print, and custom -> generic -> custom, are exact; the inferred bounds verify.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @bounded(%x: tensor<3x5xf32>, %c: tensor<4xi1>, %s: tensor<i32>, %b: tensor<2x7xbf16>, %c7: tensor<7xi1>) {
// CHECK-NEXT:  %0, %1 = graph.nonzero %x : (tensor<3x5xf32>) -> (tensor<2x15xi64>, tensor<i64>)
// CHECK-NEXT:  %2, %3 = graph.nonzero %s : (tensor<i32>) -> (tensor<1x1xi64>, tensor<i64>)
// CHECK-NEXT:  %4, %5 = graph.compress %x, %c {axis = 1 : i64} : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<3x4xf32>, tensor<i64>)
// CHECK-NEXT:  %6, %7 = graph.compress %x, %c : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<4xf32>, tensor<i64>)
// CHECK-NEXT:  %8, %9 = graph.compress %b, %c7 {axis = 1 : i64} : (tensor<2x7xbf16>, tensor<7xi1>) -> (tensor<2x7xbf16>, tensor<i64>)
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @bounded(%x: tensor<3x5xf32>, %c: tensor<4xi1>, %s: tensor<i32>, %b: tensor<2x7xbf16>, %c7: tensor<7xi1>) {
  %0, %1 = graph.nonzero %x : (tensor<3x5xf32>) -> (tensor<2x15xi64>, tensor<i64>)
  %2, %3 = graph.nonzero %s : (tensor<i32>) -> (tensor<1x1xi64>, tensor<i64>)
  %4, %5 = graph.compress %x, %c {axis = 1 : i64} : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<3x4xf32>, tensor<i64>)
  %6, %7 = graph.compress %x, %c : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<4xf32>, tensor<i64>)
  %8, %9 = graph.compress %b, %c7 {axis = 1 : i64} : (tensor<2x7xbf16>, tensor<7xi1>) -> (tensor<2x7xbf16>, tensor<i64>)
  func.return
}

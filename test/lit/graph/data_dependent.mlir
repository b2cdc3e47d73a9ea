// Round trips of the bounded-result ops (nonzero, compress, unique, non_max_suppression): custom -> print -> parse ->
// print, and custom -> generic -> custom, are exact; the inferred bounds verify.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @bounded(%x: tensor<3x5xf32>, %c: tensor<4xi1>, %s: tensor<i32>, %b: tensor<2x7xbf16>, %c7: tensor<7xi1>) {
// CHECK-NEXT:  %0, %1 = graph.nonzero %x : (tensor<3x5xf32>) -> (tensor<2x15xi64>, tensor<i64>)
// CHECK-NEXT:  %2, %3 = graph.nonzero %s : (tensor<i32>) -> (tensor<1x1xi64>, tensor<i64>)
// CHECK-NEXT:  %4, %5 = graph.compress %x, %c {axis = 1 : i64} : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<3x4xf32>, tensor<i64>)
// CHECK-NEXT:  %6, %7 = graph.compress %x, %c : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<4xf32>, tensor<i64>)
// CHECK-NEXT:  %8, %9 = graph.compress %b, %c7 {axis = 1 : i64} : (tensor<2x7xbf16>, tensor<7xi1>) -> (tensor<2x7xbf16>, tensor<i64>)
// CHECK-NEXT:  %10, %11, %12, %13, %14 = graph.unique %x {axis = 1 : i64, sorted = false} : (tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>)
// CHECK-NEXT:  %15, %16, %17, %18, %19 = graph.unique %s : (tensor<i32>) -> (tensor<1xi32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<i64>)
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @bounded(%x: tensor<3x5xf32>, %c: tensor<4xi1>, %s: tensor<i32>, %b: tensor<2x7xbf16>, %c7: tensor<7xi1>) {
  %0, %1 = graph.nonzero %x : (tensor<3x5xf32>) -> (tensor<2x15xi64>, tensor<i64>)
  %2, %3 = graph.nonzero %s : (tensor<i32>) -> (tensor<1x1xi64>, tensor<i64>)
  %4, %5 = graph.compress %x, %c {axis = 1 : i64} : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<3x4xf32>, tensor<i64>)
  %6, %7 = graph.compress %x, %c : (tensor<3x5xf32>, tensor<4xi1>) -> (tensor<4xf32>, tensor<i64>)
  %8, %9 = graph.compress %b, %c7 {axis = 1 : i64} : (tensor<2x7xbf16>, tensor<7xi1>) -> (tensor<2x7xbf16>, tensor<i64>)
  %10, %11, %12, %13, %14 = graph.unique %x {axis = 1 : i64, sorted = false} : (tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>)
  %15, %16, %17, %18, %19 = graph.unique %s : (tensor<i32>) -> (tensor<1xi32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<i64>)
  func.return
}

// CHECK-LABEL: func.func @nms(%boxes: tensor<2x6x4xf32>, %scores: tensor<2x3x6xf32>, %max: tensor<1xi64>, %iou: tensor<1xf32>, %thr: tensor<f32>) {
// CHECK-NEXT:  %0, %1 = graph.non_max_suppression %boxes, %scores, %max, %iou {max_selected_per_class = 2 : i64} : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<1xi64>, tensor<1xf32>) -> (tensor<12x3xi64>, tensor<i64>)
// CHECK-NEXT:  %2, %3 = graph.non_max_suppression %boxes, %scores, %max, %iou, %thr {center_point_box = true} : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<f32>) -> (tensor<36x3xi64>, tensor<i64>)
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @nms(%boxes: tensor<2x6x4xf32>, %scores: tensor<2x3x6xf32>, %max: tensor<1xi64>, %iou: tensor<1xf32>, %thr: tensor<f32>) {
  %0, %1 = graph.non_max_suppression %boxes, %scores, %max, %iou {max_selected_per_class = 2 : i64} : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<1xi64>, tensor<1xf32>) -> (tensor<12x3xi64>, tensor<i64>)
  %2, %3 = graph.non_max_suppression %boxes, %scores, %max, %iou, %thr {center_point_box = true} : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<f32>) -> (tensor<36x3xi64>, tensor<i64>)
  func.return
}

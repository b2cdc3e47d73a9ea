// Round trips of graph.constant (inline dense values: splat, rank 0, empty, i1, ui8, f16,
// dialect-prefixed extra attributes) and graph.weight (no store attached: the type is not
// checked): custom -> print -> parse -> print, and custom -> generic -> custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @constants() {
// CHECK-NEXT:  %0 = graph.constant dense<[1.500000e+00, -2.000000e+00, 3.250000e+00]> : tensor<3xf32>
// CHECK-NEXT:  %1 = graph.constant dense<7.000000e+00> : tensor<f32>
// CHECK-NEXT:  %2 = graph.constant dense<2.500000e+00> : tensor<2x3xf32>
// CHECK-NEXT:  %3 = graph.constant dense<{{\[\[}}1, 2, 3], [4, 5, 6{{\]\]}}> : tensor<2x3xi64>
// CHECK-NEXT:  %4 = graph.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:  %5 = graph.constant dense<> : tensor<0x3xf32>
// CHECK-NEXT:  %6 = graph.constant dense<[0, 255]> : tensor<2xui8>
// CHECK-NEXT:  %7 = graph.constant {dlc.origin = "onnx"} dense<[1, -1]> : tensor<2xi32>
// CHECK-NEXT:  %8 = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @constants() {
  %0 = graph.constant dense<[1.5, -2.0, 3.25]> : tensor<3xf32>
  %1 = graph.constant dense<7.0> : tensor<f32>
  %2 = graph.constant dense<2.5> : tensor<2x3xf32>
  %3 = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %4 = graph.constant dense<[true, false]> : tensor<2xi1>
  %5 = graph.constant dense<> : tensor<0x3xf32>
  %6 = graph.constant dense<[0, 255]> : tensor<2xui8>
  %7 = graph.constant {dlc.origin = "onnx"} dense<[1, -1]> : tensor<2xi32>
  %8 = graph.constant dense<[1.0, 2.0]> : tensor<2xf16>
  func.return
}

// CHECK-LABEL: func.func @weights(%x: tensor<4x3xf32>) {
// CHECK-NEXT:  %0 = graph.weight "fc.weight" : tensor<10x3xf32>
// CHECK-NEXT:  %1 = graph.weight "fc.bias" {dlc.note = "unattached"} : tensor<10xf32>
// CHECK-NEXT:  %2 = graph.dense %x, %0, %1 : (tensor<4x3xf32>, tensor<10x3xf32>, tensor<10xf32>) -> tensor<4x10xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @weights(%x: tensor<4x3xf32>) {
  %0 = graph.weight "fc.weight" : tensor<10x3xf32>
  %1 = graph.weight "fc.bias" {dlc.note = "unattached"} : tensor<10xf32>
  %2 = graph.dense %x, %0, %1 : (tensor<4x3xf32>, tensor<10x3xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  func.return
}

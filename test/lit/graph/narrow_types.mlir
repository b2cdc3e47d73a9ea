// Narrow element types (bf16, float8, float4, e8m0, i4/ui4/i2/ui2) in the graph
// dialect: constants, graph.cast with saturate / round_mode, and data movement.
// custom -> print -> parse -> print, and custom -> generic -> custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @narrow(%x: tensor<3x5xf32>, %q: tensor<3x5xi4>, %b: tensor<3x5xbf16>) -> (tensor<5x3xf8E4M3FN>, tensor<3x5xf32>) {
// CHECK-NEXT:  %c0 = graph.constant dense<[1.500000e+00, -2.000000e+00]> : tensor<2xbf16>
// CHECK-NEXT:  %c1 = graph.constant dense<[3, -2, 7, -8]> : tensor<4xi4>
// CHECK-NEXT:  %c2 = graph.constant dense<[5.000000e-01, 4.480000e+02]> : tensor<2xf8E4M3FN>
// CHECK-NEXT:  %c3 = graph.constant dense<[1, 3]> : tensor<2xui2>
// CHECK-NEXT:  %c4 = graph.constant dense<[5.000000e-01, 6.000000e+00]> : tensor<2xf4E2M1FN>
// CHECK-NEXT:  %0 = graph.cast %x {to = f8E4M3FN, saturate = false} : (tensor<3x5xf32>) -> tensor<3x5xf8E4M3FN>
// CHECK-NEXT:  %1 = graph.transpose %0 {perm = array<i64: 1, 0>} : (tensor<3x5xf8E4M3FN>) -> tensor<5x3xf8E4M3FN>
// CHECK-NEXT:  %2 = graph.cast %q {to = f32} : (tensor<3x5xi4>) -> tensor<3x5xf32>
// CHECK-NEXT:  %3 = graph.cast %x {to = f8E8M0FNU, round_mode = "nearest"} : (tensor<3x5xf32>) -> tensor<3x5xf8E8M0FNU>
// CHECK-NEXT:  %4 = graph.reshape %b {shape = array<i64: 15>} : (tensor<3x5xbf16>) -> tensor<15xbf16>
// CHECK-NEXT:  %5 = graph.cast %4 {to = f8E5M2FNUZ} : (tensor<15xbf16>) -> tensor<15xf8E5M2FNUZ>
// CHECK-NEXT:  %6 = graph.concat %c1, %c1 {axis = 0 : i64} : (tensor<4xi4>, tensor<4xi4>) -> tensor<8xi4>
// CHECK-NEXT:  func.return %1, %2 : tensor<5x3xf8E4M3FN>, tensor<3x5xf32>
// CHECK-NEXT:  }
func.func @narrow(%x: tensor<3x5xf32>, %q: tensor<3x5xi4>, %b: tensor<3x5xbf16>) -> (tensor<5x3xf8E4M3FN>, tensor<3x5xf32>) {
  %c0 = graph.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  %c1 = graph.constant dense<[3, -2, 7, -8]> : tensor<4xi4>
  %c2 = graph.constant dense<[0.5, 448.0]> : tensor<2xf8E4M3FN>
  %c3 = graph.constant dense<[1, 3]> : tensor<2xui2>
  %c4 = graph.constant dense<[0.5, 6.0]> : tensor<2xf4E2M1FN>
  %0 = graph.cast %x {to = f8E4M3FN, saturate = false} : (tensor<3x5xf32>) -> tensor<3x5xf8E4M3FN>
  %1 = graph.transpose %0 {perm = array<i64: 1, 0>} : (tensor<3x5xf8E4M3FN>) -> tensor<5x3xf8E4M3FN>
  %2 = graph.cast %q {to = f32} : (tensor<3x5xi4>) -> tensor<3x5xf32>
  %3 = graph.cast %x {to = f8E8M0FNU, round_mode = "nearest"} : (tensor<3x5xf32>) -> tensor<3x5xf8E8M0FNU>
  %4 = graph.reshape %b {shape = array<i64: 15>} : (tensor<3x5xbf16>) -> tensor<15xbf16>
  %5 = graph.cast %4 {to = f8E5M2FNUZ} : (tensor<15xbf16>) -> tensor<15xf8E5M2FNUZ>
  %6 = graph.concat %c1, %c1 {axis = 0 : i64} : (tensor<4xi4>, tensor<4xi4>) -> tensor<8xi4>
  func.return %1, %2 : tensor<5x3xf8E4M3FN>, tensor<3x5xf32>
}

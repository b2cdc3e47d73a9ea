// Round trips of the quantized ops (dialects/graph/quantized.py): custom -> print -> parse ->
// print, and custom -> generic -> custom, are exact. max_pool2d takes quantized values as they are.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @ops(%x: tensor<2x3xf32>, %q: tensor<3x4xi8>, %acc: tensor<2x5xi32>, %cx: tensor<1x2x5x5xui8>, %cw: tensor<3x2x3x3xi8>, %cb: tensor<3xi32>, %dx: tensor<3x7xi8>, %dw: tensor<2x7xi8>, %db: tensor<2xi32>, %ma: tensor<2x3x5xui8>, %mb: tensor<2x5x4xui8>, %aa: tensor<2x1x3xi8>, %ab: tensor<4x1xi8>, %ca: tensor<2x3xi8>, %cc: tensor<2x5xi8>) {
// CHECK-NEXT:  %0 = graph.quantize %x {scale = array<f32: 5.000000e-01>, zero_point = array<i64: 3>, dtype = ui8} : (tensor<2x3xf32>) -> tensor<2x3xui8>
// CHECK-NEXT:  %1 = graph.quantize %x {scale = array<f32: 5.000000e-01, 2.500000e-01, 1.000000e+00>, axis = -1 : i64, dtype = i8} : (tensor<2x3xf32>) -> tensor<2x3xi8>
// CHECK-NEXT:  %2 = graph.dequantize %q {scale = array<f32: 5.000000e-01, 2.500000e-01, 2.000000e+00>, zero_point = array<i64: 0>, axis = 0 : i64} : (tensor<3x4xi8>) -> tensor<3x4xf32>
// CHECK-NEXT:  %3 = graph.dequantize %acc {scale = array<f32: 1.000000e-03>} : (tensor<2x5xi32>) -> tensor<2x5xf32>
// CHECK-NEXT:  %4 = graph.requantize %acc {x_scale = array<f32: 2.000000e-02>, y_scale = array<f32: 5.000000e-02>, y_zero_point = array<i64: -3>, dtype = i8} : (tensor<2x5xi32>) -> tensor<2x5xi8>
// CHECK-NEXT:  %5 = graph.qconv2d %cx, %cw, %cb {padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 5.000000e-02>, x_zero_point = array<i64: 128>, w_scale = array<f32: 1.000000e-02, 2.000000e-02, 3.000000e-02>, y_scale = array<f32: 1.000000e-01>, y_zero_point = array<i64: 120>, out_min = 120 : i64} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x5x5xui8>
// CHECK-NEXT:  %6 = graph.qconv2d %cx, %cw {strides = array<i64: 2, 2>, x_scale = array<f32: 5.000000e-02>, w_scale = array<f32: 1.000000e-02>, y_scale = array<f32: 1.000000e-01>, dtype = i8} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>) -> tensor<1x3x2x2xi8>
// CHECK-NEXT:  %7 = graph.qdense %dx, %dw, %db {x_scale = array<f32: 1.000000e-01>, x_zero_point = array<i64: -5>, w_scale = array<f32: 1.000000e-02, 2.000000e-02>, y_scale = array<f32: 2.000000e-01>} : (tensor<3x7xi8>, tensor<2x7xi8>, tensor<2xi32>) -> tensor<3x2xi8>
// CHECK-NEXT:  %8 = graph.qmatmul %ma, %mb {a_scale = array<f32: 1.000000e-01>, a_zero_point = array<i64: 3>, b_scale = array<f32: 5.000000e-02>, y_scale = array<f32: 3.000000e-01>, y_zero_point = array<i64: 1>} : (tensor<2x3x5xui8>, tensor<2x5x4xui8>) -> tensor<2x3x4xui8>
// CHECK-NEXT:  %9 = graph.qadd %aa, %ab {a_scale = array<f32: 1.000000e-01>, a_zero_point = array<i64: 2>, b_scale = array<f32: 3.000000e-01>, y_scale = array<f32: 2.500000e-01>, y_zero_point = array<i64: -1>, out_min = -1 : i64} : (tensor<2x1x3xi8>, tensor<4x1xi8>) -> tensor<2x4x3xi8>
// CHECK-NEXT:  %10 = graph.qmul %ca, %ca {a_scale = array<f32: 1.000000e-01>, b_scale = array<f32: 3.000000e-01>, y_scale = array<f32: 5.000000e-02>} : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<2x3xi8>
// CHECK-NEXT:  %11 = graph.qconcat %ca, %cc {axis = 1 : i64, in_scale = array<f32: 1.000000e-01, 2.000000e-01>, in_zero_point = array<i64: 0, 5>, y_scale = array<f32: 2.000000e-01>, y_zero_point = array<i64: 5>} : (tensor<2x3xi8>, tensor<2x5xi8>) -> tensor<2x8xi8>
// CHECK-NEXT:  %12 = graph.qavg_pool2d %cx {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 1.000000e-01>, x_zero_point = array<i64: 7>, y_scale = array<f32: 1.000000e-01>, y_zero_point = array<i64: 7>} : (tensor<1x2x5x5xui8>) -> tensor<1x2x3x3xui8>
// CHECK-NEXT:  %13 = graph.max_pool2d %cx {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xui8>) -> tensor<1x2x4x4xui8>
// CHECK-NEXT:  %14 = graph.quantize %x {scale = array<f32: 5.000000e-01>, dtype = i8, rounding = "half_away"} : (tensor<2x3xf32>) -> tensor<2x3xi8>
// CHECK-NEXT:  %15 = graph.qdense %dx, %dw {x_scale = array<f32: 1.000000e-01>, w_scale = array<f32: 1.000000e-02>, y_scale = array<f32: 2.000000e-01>, requant = "float"} : (tensor<3x7xi8>, tensor<2x7xi8>) -> tensor<3x2xi8>
// CHECK-NEXT:  func.return
// CHECK-NEXT: }

func.func @ops(%x: tensor<2x3xf32>, %q: tensor<3x4xi8>, %acc: tensor<2x5xi32>, %cx: tensor<1x2x5x5xui8>, %cw: tensor<3x2x3x3xi8>, %cb: tensor<3xi32>, %dx: tensor<3x7xi8>, %dw: tensor<2x7xi8>, %db: tensor<2xi32>, %ma: tensor<2x3x5xui8>, %mb: tensor<2x5x4xui8>, %aa: tensor<2x1x3xi8>, %ab: tensor<4x1xi8>, %ca: tensor<2x3xi8>, %cc: tensor<2x5xi8>) {
  %0 = graph.quantize %x {scale = array<f32: 0.5>, zero_point = array<i64: 3>, dtype = ui8} : (tensor<2x3xf32>) -> tensor<2x3xui8>
  %1 = graph.quantize %x {scale = array<f32: 0.5, 0.25, 1.0>, axis = -1 : i64, dtype = i8} : (tensor<2x3xf32>) -> tensor<2x3xi8>
  %2 = graph.dequantize %q {scale = array<f32: 0.5, 0.25, 2.0>, zero_point = array<i64: 0>, axis = 0 : i64} : (tensor<3x4xi8>) -> tensor<3x4xf32>
  %3 = graph.dequantize %acc {scale = array<f32: 0.001>} : (tensor<2x5xi32>) -> tensor<2x5xf32>
  %4 = graph.requantize %acc {x_scale = array<f32: 0.02>, y_scale = array<f32: 0.05>, y_zero_point = array<i64: -3>, dtype = i8} : (tensor<2x5xi32>) -> tensor<2x5xi8>
  %5 = graph.qconv2d %cx, %cw, %cb {padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01, 0.02, 0.03>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 120>, out_min = 120 : i64} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x5x5xui8>
  %6 = graph.qconv2d %cx, %cw {strides = array<i64: 2, 2>, x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, dtype = i8} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>) -> tensor<1x3x2x2xi8>
  %7 = graph.qdense %dx, %dw, %db {x_scale = array<f32: 0.1>, x_zero_point = array<i64: -5>, w_scale = array<f32: 0.01, 0.02>, y_scale = array<f32: 0.2>} : (tensor<3x7xi8>, tensor<2x7xi8>, tensor<2xi32>) -> tensor<3x2xi8>
  %8 = graph.qmatmul %ma, %mb {a_scale = array<f32: 0.1>, a_zero_point = array<i64: 3>, b_scale = array<f32: 0.05>, y_scale = array<f32: 0.3>, y_zero_point = array<i64: 1>} : (tensor<2x3x5xui8>, tensor<2x5x4xui8>) -> tensor<2x3x4xui8>
  %9 = graph.qadd %aa, %ab {a_scale = array<f32: 0.1>, a_zero_point = array<i64: 2>, b_scale = array<f32: 0.3>, y_scale = array<f32: 0.25>, y_zero_point = array<i64: -1>, out_min = -1 : i64} : (tensor<2x1x3xi8>, tensor<4x1xi8>) -> tensor<2x4x3xi8>
  %10 = graph.qmul %ca, %ca {a_scale = array<f32: 0.1>, b_scale = array<f32: 0.3>, y_scale = array<f32: 0.05>} : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<2x3xi8>
  %11 = graph.qconcat %ca, %cc {axis = 1 : i64, in_scale = array<f32: 0.1, 0.2>, in_zero_point = array<i64: 0, 5>, y_scale = array<f32: 0.2>, y_zero_point = array<i64: 5>} : (tensor<2x3xi8>, tensor<2x5xi8>) -> tensor<2x8xi8>
  %12 = graph.qavg_pool2d %cx {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 0.1>, x_zero_point = array<i64: 7>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 7>} : (tensor<1x2x5x5xui8>) -> tensor<1x2x3x3xui8>
  %13 = graph.max_pool2d %cx {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xui8>) -> tensor<1x2x4x4xui8>
  %14 = graph.quantize %x {scale = array<f32: 0.5>, dtype = i8, rounding = "half_away"} : (tensor<2x3xf32>) -> tensor<2x3xi8>
  %15 = graph.qdense %dx, %dw {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.2>, requant = "float"} : (tensor<3x7xi8>, tensor<2x7xi8>) -> tensor<3x2xi8>
  func.return
}

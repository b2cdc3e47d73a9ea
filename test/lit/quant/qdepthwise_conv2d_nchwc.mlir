// graph.qdepthwise_conv2d_nchwc (dialects/graph/quantized.py): round trips (custom, generic)
// are exact; the result takes the input's block.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @ops
// CHECK-NEXT:  %0 = graph.qdepthwise_conv2d_nchwc %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, x_scale = array<f32: 5.000000e-02>, x_zero_point = array<i64: 128>, w_scale = array<f32: 1.000000e-02>, y_scale = array<f32: 1.000000e-01>, y_zero_point = array<i64: 5>, out_min = 5 : i64} : (tensor<1x2x8x8x16xui8>, tensor<20x1x3x3xi8>, tensor<20xi32>) -> tensor<1x2x4x4x16xui8>
// CHECK-NEXT:  %1 = graph.qdepthwise_conv2d_nchwc %y, %v {x_scale = array<f32: 5.000000e-02>, w_scale = array<f32: 1.000000e-02, 2.000000e-02, 3.000000e-02>, w_zero_point = array<i64: 1, -2, 3>, y_scale = array<f32: 1.000000e-01>} : (tensor<2x1x7x5x4xi8>, tensor<3x1x3x3xi8>) -> tensor<2x1x5x3x4xi8>
// CHECK-NEXT:  func.return
func.func @ops(%x: tensor<1x2x8x8x16xui8>, %w: tensor<20x1x3x3xi8>, %b: tensor<20xi32>, %y: tensor<2x1x7x5x4xi8>, %v: tensor<3x1x3x3xi8>) {
  %0 = graph.qdepthwise_conv2d_nchwc %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 5>, out_min = 5 : i64} : (tensor<1x2x8x8x16xui8>, tensor<20x1x3x3xi8>, tensor<20xi32>) -> tensor<1x2x4x4x16xui8>
  %1 = graph.qdepthwise_conv2d_nchwc %y, %v {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01, 0.02, 0.03>, w_zero_point = array<i64: 1, -2, 3>, y_scale = array<f32: 0.1>} : (tensor<2x1x7x5x4xi8>, tensor<3x1x3x3xi8>) -> tensor<2x1x5x3x4xi8>
  func.return
}

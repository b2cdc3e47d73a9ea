// graph.qconv2d_nchwc (dialects/graph/quantized.py): round trips (custom, generic) are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @ops
// CHECK-NEXT:  %0 = graph.qconv2d_nchwc %x, %w, %b {x_scale = array<f32: 5.000000e-02>, x_zero_point = array<i64: 128>, w_scale = array<f32: 1.000000e-02, 2.000000e-02, 3.000000e-02>, y_scale = array<f32: 1.000000e-01>, y_zero_point = array<i64: 120>} : (tensor<1x1x7x7x4xui8>, tensor<3x3x3x3xi8>, tensor<3xi32>) -> tensor<1x1x5x5x16xui8>
// CHECK-NEXT:  %1 = graph.qconv2d_nchwc %y, %v {strides = array<i64: 2, 2>, x_scale = array<f32: 5.000000e-02>, w_scale = array<f32: 1.000000e-02>, y_scale = array<f32: 1.000000e-01>, out_min = 3 : i64} : (tensor<2x2x5x5x16xui8>, tensor<17x20x1x1xi8>) -> tensor<2x2x3x3x16xui8>
// CHECK-NEXT:  func.return
func.func @ops(%x: tensor<1x1x7x7x4xui8>, %w: tensor<3x3x3x3xi8>, %b: tensor<3xi32>, %y: tensor<2x2x5x5x16xui8>, %v: tensor<17x20x1x1xi8>) {
  %0 = graph.qconv2d_nchwc %x, %w, %b {x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01, 0.02, 0.03>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 120>} : (tensor<1x1x7x7x4xui8>, tensor<3x3x3x3xi8>, tensor<3xi32>) -> tensor<1x1x5x5x16xui8>
  %1 = graph.qconv2d_nchwc %y, %v {strides = array<i64: 2, 2>, x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, out_min = 3 : i64} : (tensor<2x2x5x5x16xui8>, tensor<17x20x1x1xi8>) -> tensor<2x2x3x3x16xui8>
  func.return
}

// alter-op-layout's int8 chains: u8 qconv2d (constant weight, zero weight zero point) ->
// qconv2d_nchwc on NCHW{ib}c (a 3-channel input: NCHW4c, vpdpbusd's 4-byte groups), the
// padding a graph.pad of x's zero point, qadd of blocked values blocked too; one transform
// in, one out. s8 activations keep graph.qconv2d (the qgemm kernel).
// RUN: dlc-opt %s --split-input-file -p alter-op-layout | filecheck %s

// CHECK-LABEL: func.func @chain
// CHECK:       %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW4c"} : (tensor<1x3x8x8xui8>) -> tensor<1x1x8x8x4xui8>
// CHECK-NEXT:  %1 = graph.pad %0 {pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 1, 1, 0>, value = 1.280000e+02 : f32} : (tensor<1x1x8x8x4xui8>) -> tensor<1x1x10x10x4xui8>
// CHECK-NEXT:  %2 = graph.qconv2d_nchwc %1, %w1, %b1 {block = 16 : i64, strides = array<i64: 2, 2>, {{.*}} out_min = 5 : i64} : (tensor<1x1x10x10x4xui8>, tensor<20x3x3x3xi8>, tensor<20xi32>) -> tensor<1x2x4x4x16xui8>
// CHECK-NEXT:  %3 = graph.qconv2d_nchwc %2, %w2 {{.*}} : (tensor<1x2x4x4x16xui8>, tensor<20x20x1x1xi8>) -> tensor<1x2x4x4x16xui8>
// CHECK-NEXT:  %4 = graph.qadd %3, %2 {{.*}} : (tensor<1x2x4x4x16xui8>, tensor<1x2x4x4x16xui8>) -> tensor<1x2x4x4x16xui8>
// CHECK-NEXT:  %5 = graph.layout_transform %4 {src = "NCHW16c", dst = "NCHW", channels = 20 : i64}
// CHECK-NEXT:  func.return %5

// CHECK-LABEL: func.func @signed_stays
// CHECK-NOT:   layout_transform
// CHECK:       graph.qconv2d %x, %w
func.func @chain(%x: tensor<1x3x8x8xui8>) -> tensor<1x20x4x4xui8> {
  %w1 = graph.constant dense<3> : tensor<20x3x3x3xi8>
  %b1 = graph.constant dense<7> : tensor<20xi32>
  %w2 = graph.constant dense<-2> : tensor<20x20x1x1xi8>
  %c1 = graph.qconv2d %x, %w1, %b1 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 5>, out_min = 5 : i64} : (tensor<1x3x8x8xui8>, tensor<20x3x3x3xi8>, tensor<20xi32>) -> tensor<1x20x4x4xui8>
  %c2 = graph.qconv2d %c1, %w2 {x_scale = array<f32: 0.1>, x_zero_point = array<i64: 5>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 5>} : (tensor<1x20x4x4xui8>, tensor<20x20x1x1xi8>) -> tensor<1x20x4x4xui8>
  %s = graph.qadd %c2, %c1 {a_scale = array<f32: 0.1>, a_zero_point = array<i64: 5>, b_scale = array<f32: 0.1>, b_zero_point = array<i64: 5>, y_scale = array<f32: 0.2>, y_zero_point = array<i64: 3>} : (tensor<1x20x4x4xui8>, tensor<1x20x4x4xui8>) -> tensor<1x20x4x4xui8>
  func.return %s : tensor<1x20x4x4xui8>
}

// -----

func.func @signed_stays(%x: tensor<1x4x5x5xi8>) -> tensor<1x4x5x5xi8> {
  %w = graph.constant dense<3> : tensor<4x4x1x1xi8>
  %c = graph.qconv2d %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x4x5x5xi8>, tensor<4x4x1x1xi8>) -> tensor<1x4x5x5xi8>
  func.return %c : tensor<1x4x5x5xi8>
}

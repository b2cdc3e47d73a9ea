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

// -----

// A MobileNet int8 block: qconv 1x1 -> depthwise qconv 3x3 (stride 2, its padding kept in
// the op: no graph.pad) -> qconv 1x1 stays in NCHW16c (one transform in, one out); the
// depthwise's OIHW weight stays (its kernel packs it per block). A depthwise qconv of a
// plain value stays plain.
// CHECK-LABEL: func.func @mobilenet_block
// CHECK:       %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW16c"}
// CHECK-NEXT:  %1 = graph.qconv2d_nchwc %0, %w1 {{.*}} -> tensor<1x3x8x8x16xui8>
// CHECK-NEXT:  %2 = graph.qdepthwise_conv2d_nchwc %1, %wd, %bd {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, {{.*}} : (tensor<1x3x8x8x16xui8>, tensor<40x1x3x3xi8>, tensor<40xi32>) -> tensor<1x3x4x4x16xui8>
// CHECK-NEXT:  %3 = graph.qconv2d_nchwc %2, %w2 {{.*}} : (tensor<1x3x4x4x16xui8>, tensor<24x40x1x1xi8>) -> tensor<1x2x4x4x16xui8>
// CHECK-NEXT:  %4 = graph.layout_transform %3 {src = "NCHW16c", dst = "NCHW", channels = 24 : i64}
// CHECK-NEXT:  func.return %4
func.func @mobilenet_block(%x: tensor<1x16x8x8xui8>) -> tensor<1x24x4x4xui8> {
  %w1 = graph.constant dense<3> : tensor<40x16x1x1xi8>
  %wd = graph.constant dense<-2> : tensor<40x1x3x3xi8>
  %bd = graph.constant dense<11> : tensor<40xi32>
  %w2 = graph.constant dense<1> : tensor<24x40x1x1xi8>
  %c1 = graph.qconv2d %x, %w1 {x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 7>, out_min = 7 : i64} : (tensor<1x16x8x8xui8>, tensor<40x16x1x1xi8>) -> tensor<1x40x8x8xui8>
  %d = graph.qconv2d %c1, %wd, %bd {groups = 40 : i64, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 0.1>, x_zero_point = array<i64: 7>, w_scale = array<f32: 0.02>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 7>, out_min = 7 : i64} : (tensor<1x40x8x8xui8>, tensor<40x1x3x3xi8>, tensor<40xi32>) -> tensor<1x40x4x4xui8>
  %c2 = graph.qconv2d %d, %w2 {x_scale = array<f32: 0.1>, x_zero_point = array<i64: 7>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 5>} : (tensor<1x40x4x4xui8>, tensor<24x40x1x1xi8>) -> tensor<1x24x4x4xui8>
  func.return %c2 : tensor<1x24x4x4xui8>
}

// -----

// CHECK-LABEL: func.func @plain_depthwise_stays
// CHECK-NOT:   layout_transform
// CHECK:       graph.qconv2d %x, %w {groups = 8 : i64
func.func @plain_depthwise_stays(%x: tensor<1x8x5x5xui8>) -> tensor<1x8x5x5xui8> {
  %w = graph.constant dense<3> : tensor<8x1x3x3xi8>
  %c = graph.qconv2d %x, %w {groups = 8 : i64, padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x8x5x5xui8>, tensor<8x1x3x3xi8>) -> tensor<1x8x5x5xui8>
  func.return %c : tensor<1x8x5x5xui8>
}

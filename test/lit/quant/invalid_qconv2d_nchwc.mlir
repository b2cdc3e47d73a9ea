// Verifier rules of graph.qconv2d_nchwc, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<1x1x7x7x3xui8>, %w: tensor<3x3x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d_nchwc: input block 3 must be a multiple of 4 (vpdpbusd's 4-byte groups)}}
  %0 = graph.qconv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x1x7x7x3xui8>, tensor<3x3x3x3xi8>) -> tensor<1x1x5x5x16xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x1x7x7x4xi8>, %w: tensor<3x3x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d_nchwc: x must be ui8 (u8 activations feed vpdpbusd), got i8}}
  %0 = graph.qconv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x1x7x7x4xi8>, tensor<3x3x3x3xi8>) -> tensor<1x1x5x5x16xi8>
  func.return
}

// -----

func.func @f(%x: tensor<1x1x7x7x4xui8>, %w: tensor<3x5x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d_nchwc: weight has 5 input channels but the input holds 1 x 4}}
  %0 = graph.qconv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x1x7x7x4xui8>, tensor<3x5x3x3xi8>) -> tensor<1x1x5x5x16xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x1x7x7x4xui8>, %w: tensor<3x3x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d_nchwc: input must be 5-D (NCHW{b}c) and weight 4-D (OIHW), got ranks 5 and 5}}
  %0 = graph.qconv2d_nchwc %x, %x {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x1x7x7x4xui8>, tensor<1x1x7x7x4xui8>) -> tensor<1x1x5x5x16xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x1x7x7x4xui8>, %w: tensor<3x3x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d_nchwc: w_scale has 2 values, expected 1 value or one per output channel (3)}}
  %0 = graph.qconv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01, 0.02>, y_scale = array<f32: 0.1>} : (tensor<1x1x7x7x4xui8>, tensor<3x3x3x3xi8>) -> tensor<1x1x5x5x16xui8>
  func.return
}

// Verifier rules of graph.qdepthwise_conv2d_nchwc, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<1x2x7x7x16xui8>, %w: tensor<20x2x3x3xi8>) {
  // expected-error @+1 {{graph.qdepthwise_conv2d_nchwc: a depthwise weight has 1 input channel per filter, got 2}}
  %0 = graph.qdepthwise_conv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x2x7x7x16xui8>, tensor<20x2x3x3xi8>) -> tensor<1x2x5x5x16xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x7x7x16xui8>, %w: tensor<40x1x3x3xi8>) {
  // expected-error @+1 {{graph.qdepthwise_conv2d_nchwc: weight has 40 channels but the input holds 2 blocks of 16 (ceil(40/16) = 3 expected)}}
  %0 = graph.qdepthwise_conv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x2x7x7x16xui8>, tensor<40x1x3x3xi8>) -> tensor<1x2x5x5x16xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x7x7xui8>, %w: tensor<20x1x3x3xi8>) {
  // expected-error @+1 {{graph.qdepthwise_conv2d_nchwc: input must be 5-D (NCHW{b}c) and weight 4-D (C x 1 x KH x KW), got ranks 4 and 4}}
  %0 = graph.qdepthwise_conv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x2x7x7xui8>, tensor<20x1x3x3xi8>) -> tensor<1x2x5x5xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x7x7x16xui8>, %w: tensor<20x1x3x3xi8>, %b: tensor<16xi32>) {
  // expected-error @+1 {{graph.qdepthwise_conv2d_nchwc: bias must be i32 [20], got tensor<16xi32>}}
  %0 = graph.qdepthwise_conv2d_nchwc %x, %w, %b {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x2x7x7x16xui8>, tensor<20x1x3x3xi8>, tensor<16xi32>) -> tensor<1x2x5x5x16xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x7x7x16xui8>, %w: tensor<20x1x3x3xi8>) {
  // expected-error @+1 {{graph.qdepthwise_conv2d_nchwc: w_scale has 2 values, expected 1 value or one per channel (20)}}
  %0 = graph.qdepthwise_conv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01, 0.02>, y_scale = array<f32: 0.1>} : (tensor<1x2x7x7x16xui8>, tensor<20x1x3x3xi8>) -> tensor<1x2x5x5x16xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x7x7x16xf32>, %w: tensor<20x1x3x3xi8>) {
  // expected-error @+1 {{graph.qdepthwise_conv2d_nchwc: x element type f32 is not i8 or ui8 (quantized values)}}
  %0 = graph.qdepthwise_conv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x2x7x7x16xf32>, tensor<20x1x3x3xi8>) -> tensor<1x2x5x5x16xui8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x7x7x16xui8>, %w: tensor<20x1x3x3xi8>) {
  // expected-error @+1 {{graph.qdepthwise_conv2d_nchwc: result type tensor<1x2x7x7x16xui8> does not match the inferred type tensor<1x2x5x5x16xui8>}}
  %0 = graph.qdepthwise_conv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>} : (tensor<1x2x7x7x16xui8>, tensor<20x1x3x3xi8>) -> tensor<1x2x7x7x16xui8>
  func.return
}

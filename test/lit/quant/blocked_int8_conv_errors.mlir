// The blocked int8 convs pack their weight at compile time: a weight that is a function
// argument is a lower-to-loops error naming the op (alter-op-layout only builds them on
// constant weights), a one-line diagnostic and no traceback.
// RUN: not dlc-opt %s --split-input-file -p lower-to-loops 2>&1 | filecheck %s
// RUN: not dlc-opt %s --split-input-file -p lower-to-loops 2>&1 | filecheck %s --check-prefix=NOTRACE
// NOTRACE-NOT: Traceback

func.func @qconv(%x: tensor<1x1x7x7x4xui8>, %w: tensor<3x3x3x3xi8>) -> tensor<1x1x5x5x16xui8> {
  %y = graph.qconv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 120>} : (tensor<1x1x7x7x4xui8>, tensor<3x3x3x3xi8>) -> tensor<1x1x5x5x16xui8>
  func.return %y : tensor<1x1x5x5x16xui8>
}
// CHECK: blocked_int8_conv_errors.mlir:9:3: error: pass 'lower-to-loops' failed: graph.qconv2d_nchwc needs a constant weight (graph.constant / graph.weight)

// -----

func.func @qdepthwise(%x: tensor<1x2x9x11x16xui8>, %w: tensor<20x1x3x3xi8>) -> tensor<1x2x7x9x16xui8> {
  %y = graph.qdepthwise_conv2d_nchwc %x, %w {x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 5>} : (tensor<1x2x9x11x16xui8>, tensor<20x1x3x3xi8>) -> tensor<1x2x7x9x16xui8>
  func.return %y : tensor<1x2x7x9x16xui8>
}
// CHECK: blocked_int8_conv_errors.mlir:17:3: error: pass 'lower-to-loops' failed: graph.qdepthwise_conv2d_nchwc needs a constant weight

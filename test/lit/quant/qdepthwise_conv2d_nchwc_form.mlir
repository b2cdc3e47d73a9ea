// The qdepthwise_nchwc kernel form (kernels/quantized_depthwise_nchwc.py) and its schedule
// (schedule/defaults_quantized.py): rows of a channel block in parallel (batch 1: n gone),
// the block's 16 channels one whole vector, a register tile of T = 8 pixels (a row of 9:
// a 1-pixel tail nest, suffixed _u, scheduled the same); the write-back requantizes with
// single rounding, as the op's reference: multipliers below 0.5 here, so the product and
// rounding add in i64 and the shift of its high word in i32 (requant.requantize_high_word).
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="llvm -mcpu=znver4"}' %s | filecheck %s
// RUN: dlc-opt -p 'legalize,lower-to-loops{flat-conv=true},tloop-default-schedule{target="llvm -mcpu=znver4"},expand-math,plan-workspace,lower-to-llvm' %s | filecheck %s --check-prefix=LLVM

// CHECK:      func.func @main_{{[0-9]+}}_qdepthwise_conv2d_nchwc
// CHECK-SAME: tloop.form = "qdepthwise_nchwc"
// CHECK:      tloop.weight "{{.*}}.wq" : memref<2x3x3x16xi32>
// CHECK:      tloop.weight "{{.*}}.shift_hi" : memref<2x16xi32>
// CHECK:      tloop.for %cb_oh = 0 to 14 parallel {
// CHECK:        tloop.for %owt = 0 to 1 {
// CHECK:          tloop.for %c = 0 to 16 vectorized {
// CHECK-COUNT-72:   arith.muli %{{.*}} : i32
// CHECK-COUNT-8:    arith.shrsi %{{.*}} : i32
// CHECK:          } {dlc.whole_vector}
// CHECK:      tloop.for %cb_u_oh_u = 0 to 14 parallel {
// CHECK:        tloop.for %c_u = 0 to 16 vectorized {

// LLVM: llvm.func @main_{{[0-9]+}}_qdepthwise_conv2d_nchwc
func.func @main(%x: tensor<1x2x9x11x16xui8>) -> tensor<1x2x7x9x16xui8> {
  %w = graph.constant dense<3> : tensor<20x1x3x3xi8>
  %b = graph.constant dense<7> : tensor<20xi32>
  %y = graph.qdepthwise_conv2d_nchwc %x, %w, %b {x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 5>, out_min = 5 : i64} : (tensor<1x2x9x11x16xui8>, tensor<20x1x3x3xi8>, tensor<20xi32>) -> tensor<1x2x7x9x16xui8>
  func.return %y : tensor<1x2x7x9x16xui8>
}

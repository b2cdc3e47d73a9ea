// fold-qdq: DQ -> conv2d + bias -> relu -> Q becomes graph.qconv2d with the relu as its clamp
// (out_min = the output zero point); DQ -> add -> Q becomes graph.qadd; a conv whose output
// is not quantized stays float (fold-constant then folds its dequantized weight), and the note
// says why (dlc compile -v prints the same notes).
// RUN: dlc-opt -p fold-qdq,fold-constant %s | filecheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: dlc compile %s -v -o %t/m.so 2>&1 | filecheck %s --check-prefix=NOTE

// CHECK: dlc.qdq_report = ["fold-qdq: graph.conv2d 'conv1' -> graph.qconv2d", "fold-qdq: graph.add 'add' -> graph.qadd", "fold-qdq: graph.conv2d 'conv2' stays float: its output has no graph.quantize (QuantizeLinear)"]
// CHECK-LABEL: func.func @main
// CHECK:      %[[X:[a-z0-9]+]] = graph.quantize %x {scale = array<f32: 5.000000e-02>, zero_point = array<i64: 128>, dtype = ui8}
// CHECK:      %[[C:[a-z0-9]+]] = graph.qconv2d %[[X]], %{{.*}}, %{{.*}} {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, x_scale = array<f32: 5.000000e-02>, x_zero_point = array<i64: 128>, w_scale = array<f32: 1.000000e-02, 2.000000e-02>, w_zero_point = array<i64: 0>, y_scale = array<f32: 1.000000e-01>, y_zero_point = array<i64: 10>, dtype = ui8, out_min = 10 : i64, requant = "float"} : (tensor<1x3x5x5xui8>, tensor<2x3x3x3xi8>, tensor<2xi32>) -> tensor<1x2x5x5xui8>
// CHECK:      %[[A:[a-z0-9]+]] = graph.qadd %[[C]], %[[C]] {a_scale = array<f32: 1.000000e-01>, a_zero_point = array<i64: 10>, b_scale = array<f32: 1.000000e-01>, b_zero_point = array<i64: 10>, y_scale = array<f32: 2.000000e-01>, y_zero_point = array<i64: 0>, dtype = ui8}
// CHECK:      %[[D:[a-z0-9]+]] = graph.dequantize %[[A]]
// CHECK:      graph.conv2d %[[D]], %{{.*}} :
// CHECK-NOT:  graph.dequantize
// CHECK:      func.return

// NOTE: fold-qdq: graph.conv2d 'conv1' -> graph.qconv2d
// NOTE: fold-qdq: graph.add 'add' -> graph.qadd
// NOTE: fold-qdq: graph.conv2d 'conv2' stays float: its output has no graph.quantize (QuantizeLinear)

func.func @main(%x: tensor<1x3x5x5xf32>) -> tensor<1x2x5x5xf32> {
  %wq = graph.constant dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[-1, -2, -3], [-4, -5, -6], [-7, -8, -9]], [[10, 0, -10], [20, 0, -20], [30, 0, -30]]], [[[9, 8, 7], [6, 5, 4], [3, 2, 1]], [[0, 1, 0], [1, 0, 1], [0, 1, 0]], [[5, -5, 5], [-5, 5, -5], [5, -5, 5]]]]> : tensor<2x3x3x3xi8>
  %bq = graph.constant dense<[100, -200]> : tensor<2xi32>
  %q0 = graph.quantize %x {scale = array<f32: 0.05>, zero_point = array<i64: 128>, dtype = ui8} : (tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xui8>
  %x0 = graph.dequantize %q0 {scale = array<f32: 0.05>, zero_point = array<i64: 128>} : (tensor<1x3x5x5xui8>) -> tensor<1x3x5x5xf32>
  %w = graph.dequantize %wq {scale = array<f32: 0.01, 0.02>, axis = 0 : i64} : (tensor<2x3x3x3xi8>) -> tensor<2x3x3x3xf32>
  %b = graph.dequantize %bq {scale = array<f32: 0.0005, 0.001>, axis = 0 : i64} : (tensor<2xi32>) -> tensor<2xf32>
  %c = graph.conv2d %x0, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x5x5xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x5x5xf32> loc("conv1")
  %br = graph.reshape %b {shape = array<i64: 2, 1, 1>} : (tensor<2xf32>) -> tensor<2x1x1xf32>
  %cb = graph.add %c, %br : (tensor<1x2x5x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x5x5xf32>
  %r = graph.relu %cb : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %q1 = graph.quantize %r {scale = array<f32: 0.1>, zero_point = array<i64: 10>, dtype = ui8} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xui8>
  %d1 = graph.dequantize %q1 {scale = array<f32: 0.1>, zero_point = array<i64: 10>} : (tensor<1x2x5x5xui8>) -> tensor<1x2x5x5xf32>
  %s = graph.add %d1, %d1 : (tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32> loc("add")
  %q2 = graph.quantize %s {scale = array<f32: 0.2>, dtype = ui8} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xui8>
  %d2 = graph.dequantize %q2 {scale = array<f32: 0.2>} : (tensor<1x2x5x5xui8>) -> tensor<1x2x5x5xf32>
  %w2 = graph.dequantize %wq {scale = array<f32: 0.01>} : (tensor<2x3x3x3xi8>) -> tensor<2x3x3x3xf32>
  %ws = graph.slice %w2 {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 2, 2, 3, 3>} : (tensor<2x3x3x3xf32>) -> tensor<2x2x3x3xf32>
  %y = graph.conv2d %d2, %ws {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x5x5xf32> loc("conv2")
  func.return %y : tensor<1x2x5x5xf32>
}

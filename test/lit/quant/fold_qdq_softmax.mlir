// fold-qdq: DQ -> softmax -> Q keeps the float softmax and gives the quantize onnxruntime's
// QLinearSoftmax scale 1/floor(1/y_scale) (y_scale = 1/255 is 254.99998 in f32: 1/254);
// the dequantize after it keeps y_scale. Negative: a softmax whose float output has a
// second use keeps its quantize as written, and the note says why.
// RUN: dlc-opt -p fold-qdq %s | filecheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: dlc compile %s -v -o %t/m.so 2>&1 | filecheck %s --check-prefix=NOTE

// CHECK: dlc.qdq_report = ["fold-qdq: graph.softmax 'attn' -> a softmax, its graph.quantize at QLinearSoftmax's scale 1/254", "fold-qdq: graph.softmax 'twice' stays float: the output of graph.softmax has 2 uses (a folded value must have one)"
// CHECK-LABEL: func.func @main
// CHECK:      %[[S:[a-z0-9]+]] = graph.softmax %{{.*}} {axis = -1 : i64}
// CHECK-NEXT: %[[Q:[a-z0-9]+]] = graph.quantize %[[S]] {scale = array<f32: 0.00393700786>, zero_point = array<i64: 0>, dtype = ui8}
// CHECK-NEXT: graph.dequantize %[[Q]] {scale = array<f32: 0.00392156886>, zero_point = array<i64: 0>}
// CHECK:      %[[F:[a-z0-9]+]] = graph.softmax %{{.*}} {axis = -1 : i64}
// CHECK-NEXT: graph.quantize %[[F]] {scale = array<f32: 0.00392156886>, zero_point = array<i64: 0>, dtype = ui8}

// NOTE: fold-qdq: graph.div 'attn' -> a softmax, its graph.quantize at QLinearSoftmax's scale 1/254
// NOTE: fold-qdq: graph.div 'twice' stays float: the output of graph.div has 2 uses (a folded value must have one)

func.func @main(%x: tensor<2x7xf32>) -> tensor<2x7xf32> {
  %q0 = graph.quantize %x {scale = array<f32: 0.05>, zero_point = array<i64: 128>, dtype = ui8} : (tensor<2x7xf32>) -> tensor<2x7xui8>
  %x0 = graph.dequantize %q0 {scale = array<f32: 0.05>, zero_point = array<i64: 128>} : (tensor<2x7xui8>) -> tensor<2x7xf32>
  %s = graph.softmax %x0 {axis = -1 : i64} : (tensor<2x7xf32>) -> tensor<2x7xf32> loc("attn")
  %q1 = graph.quantize %s {scale = array<f32: 0.003921569>, zero_point = array<i64: 0>, dtype = ui8} : (tensor<2x7xf32>) -> tensor<2x7xui8>
  %d1 = graph.dequantize %q1 {scale = array<f32: 0.003921569>, zero_point = array<i64: 0>} : (tensor<2x7xui8>) -> tensor<2x7xf32>
  %f = graph.softmax %d1 {axis = -1 : i64} : (tensor<2x7xf32>) -> tensor<2x7xf32> loc("twice")
  %q2 = graph.quantize %f {scale = array<f32: 0.003921569>, zero_point = array<i64: 0>, dtype = ui8} : (tensor<2x7xf32>) -> tensor<2x7xui8>
  %d2 = graph.dequantize %q2 {scale = array<f32: 0.003921569>, zero_point = array<i64: 0>} : (tensor<2x7xui8>) -> tensor<2x7xf32>
  %y = graph.add %d2, %f : (tensor<2x7xf32>, tensor<2x7xf32>) -> tensor<2x7xf32>
  func.return %y : tensor<2x7xf32>
}

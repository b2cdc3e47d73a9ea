// fold-qdq picks the rescale's rounding from the quantize below the product: an ONNX
// QuantizeLinear (round half to even, the default) gives requant = "float" (onnxruntime's
// f32 requantization), TFLite's QUANTIZE (rounding = "half_away") keeps the fixed point.
// Through the CPU lowering, the float one's write-back has no i64 product (vpmuldq).
// RUN: dlc-opt -p fold-qdq,fold-constant %s | filecheck %s
// RUN: dlc-opt -p fold-qdq,fold-constant,lower-to-loops %s | filecheck %s --check-prefix=LOOPS

// CHECK-LABEL: func.func @onnx
// CHECK:       graph.qdense %{{.*}} {x_scale = array<f32: 5.000000e-02>, x_zero_point = array<i64: 3>, w_scale = array<f32: 1.000000e-02>, w_zero_point = array<i64: 0>, y_scale = array<f32: 1.000000e-01>, y_zero_point = array<i64: 0>, dtype = i8, requant = "float"}
// CHECK-LABEL: func.func @tflite
// CHECK:       graph.qdense
// CHECK-NOT:   requant
// CHECK:       func.return

// LOOPS-LABEL: func.func @onnx
// LOOPS:       arith.sitofp %{{.*}} : i32 to f32
// LOOPS-NOT:   arith.extsi %{{.*}} : i32 to i64
// LOOPS:       func.return
// LOOPS-LABEL: func.func @tflite
// LOOPS:       arith.extsi %{{.*}} : i32 to i64
// LOOPS:       func.return

func.func @onnx(%x: tensor<4x8xf32>) -> tensor<4x2xi8> {
  %wq = graph.constant dense<[[1, 2, 3, 4, 5, 6, 7, 8], [-1, -2, -3, -4, -5, -6, -7, -8]]> : tensor<2x8xi8>
  %q0 = graph.quantize %x {scale = array<f32: 0.05>, zero_point = array<i64: 3>, dtype = i8} : (tensor<4x8xf32>) -> tensor<4x8xi8>
  %x0 = graph.dequantize %q0 {scale = array<f32: 0.05>, zero_point = array<i64: 3>} : (tensor<4x8xi8>) -> tensor<4x8xf32>
  %w = graph.dequantize %wq {scale = array<f32: 0.01>} : (tensor<2x8xi8>) -> tensor<2x8xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
  %m = graph.matmul %x0, %wt : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %y = graph.quantize %m {scale = array<f32: 0.1>, dtype = i8} : (tensor<4x2xf32>) -> tensor<4x2xi8>
  func.return %y : tensor<4x2xi8>
}

func.func @tflite(%x: tensor<4x8xf32>) -> tensor<4x2xi8> {
  %wq = graph.constant dense<[[1, 2, 3, 4, 5, 6, 7, 8], [-1, -2, -3, -4, -5, -6, -7, -8]]> : tensor<2x8xi8>
  %q0 = graph.quantize %x {scale = array<f32: 0.05>, zero_point = array<i64: 3>, dtype = i8, rounding = "half_away"} : (tensor<4x8xf32>) -> tensor<4x8xi8>
  %x0 = graph.dequantize %q0 {scale = array<f32: 0.05>, zero_point = array<i64: 3>} : (tensor<4x8xi8>) -> tensor<4x8xf32>
  %w = graph.dequantize %wq {scale = array<f32: 0.01>} : (tensor<2x8xi8>) -> tensor<2x8xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
  %m = graph.matmul %x0, %wt : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %y = graph.quantize %m {scale = array<f32: 0.1>, dtype = i8, rounding = "half_away"} : (tensor<4x2xf32>) -> tensor<4x2xi8>
  func.return %y : tensor<4x2xi8>
}

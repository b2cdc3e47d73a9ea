// Verifier rules of the quantized ops, one per chunk (dtype kinds, parameter lengths,
// zero-point ranges, scales, clamp, shapes).
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<2x3xf16>) {
  // expected-error @+1 {{graph.quantize: operand element type f16 is not f32}}
  %0 = graph.quantize %x {scale = array<f32: 0.5>, dtype = i8} : (tensor<2x3xf16>) -> tensor<2x3xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.quantize: attribute 'dtype' must be i8 or ui8, got i32}}
  %0 = graph.quantize %x {scale = array<f32: 0.5>, dtype = i32} : (tensor<2x3xf32>) -> tensor<2x3xi32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.quantize: scale has 2 values, expected 1 value or one per channel along axis (3)}}
  %0 = graph.quantize %x {scale = array<f32: 0.5, 0.5>, dtype = i8} : (tensor<2x3xf32>) -> tensor<2x3xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.quantize: zero_point value 300 is outside the range [0, 255] of the element type}}
  %0 = graph.quantize %x {scale = array<f32: 0.5>, zero_point = array<i64: 300>, dtype = ui8} : (tensor<2x3xf32>) -> tensor<2x3xui8>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.quantize: scale values must be positive and finite, got -0.5}}
  %0 = graph.quantize %x {scale = array<f32: -0.5>, dtype = i8} : (tensor<2x3xf32>) -> tensor<2x3xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.quantize: missing attribute 'dtype'}}
  %0 = graph.quantize %x {scale = array<f32: 0.5>} : (tensor<2x3xf32>) -> tensor<2x3xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.dequantize: operand element type f32 is not i8, ui8 or i32 (quantized values)}}
  %0 = graph.dequantize %x {scale = array<f32: 0.5>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xi8>) {
  // expected-error @+1 {{graph.dequantize: zero_point has 2 values, expected 1 or as many as scale (3)}}
  %0 = graph.dequantize %x {scale = array<f32: 0.5, 0.5, 0.5>, zero_point = array<i64: 1, 2>} : (tensor<2x3xi8>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d: x element type f32 is not i8 or ui8 (quantized values)}}
  %0 = graph.qconv2d %x, %w {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xi8>) -> tensor<1x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d: w_scale has 2 values, expected 1 value or one per output channel (3)}}
  %0 = graph.qconv2d %x, %w {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.1, 0.2>, y_scale = array<f32: 0.1>} : (tensor<1x2x5x5xi8>, tensor<3x2x3x3xi8>) -> tensor<1x3x3x3xi8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>, %b: tensor<3xf32>) {
  // expected-error @+1 {{graph.qconv2d: bias must be i32 [3], got tensor<3xf32>}}
  %0 = graph.qconv2d %x, %w, %b {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>} : (tensor<1x2x5x5xi8>, tensor<3x2x3x3xi8>, tensor<3xf32>) -> tensor<1x3x3x3xi8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d: x_zero_point value 200 is outside the range [-128, 127] of the element type}}
  %0 = graph.qconv2d %x, %w {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>, x_zero_point = array<i64: 200>} : (tensor<1x2x5x5xi8>, tensor<3x2x3x3xi8>) -> tensor<1x3x3x3xi8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>) {
  // expected-error @+1 {{graph.qconv2d: out_min 10 and out_max 5 must satisfy -128 <= out_min <= out_max <= 127}}
  %0 = graph.qconv2d %x, %w {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>, out_min = 10 : i64, out_max = 5 : i64} : (tensor<1x2x5x5xi8>, tensor<3x2x3x3xi8>) -> tensor<1x3x3x3xi8>
  func.return
}

// -----

func.func @f(%x: tensor<3x7xi8>, %w: tensor<2x6xi8>) {
  // expected-error @+1 {{graph.qdense: x has K=7 but weight [N, K] has K=6}}
  %0 = graph.qdense %x, %w {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>} : (tensor<3x7xi8>, tensor<2x6xi8>) -> tensor<3x2xi8>
  func.return
}

// -----

func.func @f(%a: tensor<5xi8>, %b: tensor<5x2xi8>) {
  // expected-error @+1 {{graph.qmatmul: operands must have rank >= 2, got ranks 1 and 2}}
  %0 = graph.qmatmul %a, %b {a_scale = array<f32: 0.1>, b_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>} : (tensor<5xi8>, tensor<5x2xi8>) -> tensor<2xi8>
  func.return
}

// -----

func.func @f(%a: tensor<2x3xi8>, %b: tensor<4xi8>) {
  // expected-error @+1 {{graph.qadd: shapes 2x3 and 4 are not broadcast-compatible (dims [3, 4] at axis -1)}}
  %0 = graph.qadd %a, %b {a_scale = array<f32: 0.1>, b_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>} : (tensor<2x3xi8>, tensor<4xi8>) -> tensor<2x3xi8>
  func.return
}

// -----

func.func @f(%a: tensor<2x3xi8>, %b: tensor<2x5xi8>) {
  // expected-error @+1 {{graph.qconcat: in_scale and in_zero_point must have one value per input (2), got 1 and 2}}
  %0 = graph.qconcat %a, %b {axis = 1 : i64, in_scale = array<f32: 0.1>, in_zero_point = array<i64: 0, 0>, y_scale = array<f32: 0.1>} : (tensor<2x3xi8>, tensor<2x5xi8>) -> tensor<2x8xi8>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xi8>) {
  // expected-error @+1 {{graph.qavg_pool2d: layout must be NCHW, got 'NHWC'}}
  %0 = graph.qavg_pool2d %x {kernel = array<i64: 2, 2>, layout = "NHWC", x_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>} : (tensor<1x2x5x5xi8>) -> tensor<1x2x4x4xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x5xi32>) {
  // expected-error @+1 {{graph.requantize: attribute 'dtype' (i8 or ui8) is required: the operand's type is not quantized}}
  %0 = graph.requantize %x {x_scale = array<f32: 0.1>, y_scale = array<f32: 0.1>} : (tensor<2x5xi32>) -> tensor<2x5xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.quantize: attribute 'rounding' must be one of half_even, half_away, got up}}
  %0 = graph.quantize %x {scale = array<f32: 0.5>, dtype = i8, rounding = "up"} : (tensor<2x3xf32>) -> tensor<2x3xi8>
  func.return
}

// -----

func.func @f(%dx: tensor<3x7xi8>, %dw: tensor<2x7xi8>) {
  // expected-error @+1 {{graph.qdense: attribute 'requant' must be one of fixed_point, float, got double}}
  %0 = graph.qdense %dx, %dw {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.2>, requant = "double"} : (tensor<3x7xi8>, tensor<2x7xi8>) -> tensor<3x2xi8>
  func.return
}

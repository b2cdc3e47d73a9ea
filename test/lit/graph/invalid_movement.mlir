// Verifier rules of the data-movement ops, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.reshape: element count changes: [2, 3] has 6, [4, 2] has 8}}
  %0 = graph.reshape %x {shape = array<i64: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.reshape: at most one -1 in 'shape'}}
  %0 = graph.reshape %x {shape = array<i64: -1, -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.reshape: cannot infer -1 in [4, -1] for 6 elements}}
  %0 = graph.reshape %x {shape = array<i64: 4, -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.reshape: invalid dim in shape [-2, -3]}}
  %0 = graph.reshape %x {shape = array<i64: -2, -3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.reshape: missing attribute 'shape'}}
  %0 = graph.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{graph.transpose: perm [0, 2, 2] is not a permutation of 0..2}}
  %0 = graph.transpose %x {perm = array<i64: 0, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.broadcast_to: shapes 2x3 and 4x3 are not broadcast-compatible}}
  %0 = graph.broadcast_to %x {shape = array<i64: 4, 3>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3xf32>) {
  // expected-error @+1 {{graph.broadcast_to: shape [-1, 3] has a negative dim}}
  %0 = graph.broadcast_to %x {shape = array<i64: -1, 3>} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3xf32>) {
  // expected-error @+1 {{graph.squeeze: cannot squeeze axis 1 of size 3}}
  %0 = graph.squeeze %x {axes = array<i64: 1>} : (tensor<1x3xf32>) -> tensor<1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3xf32>) {
  // expected-error @+1 {{graph.squeeze: axes [0, -2] repeat an axis}}
  %0 = graph.squeeze %x {axes = array<i64: 0, -2>} : (tensor<1x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<3xf32>) {
  // expected-error @+1 {{graph.unsqueeze: axes repeat an axis}}
  %0 = graph.unsqueeze %x {axes = array<i64: 1, -2>} : (tensor<3xf32>) -> tensor<1x1x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<3xf32>) {
  // expected-error @+1 {{graph.unsqueeze: axis 3 is out of range for rank 2}}
  %0 = graph.unsqueeze %x {axes = array<i64: 3>} : (tensor<3xf32>) -> tensor<3x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5xf32>) {
  // expected-error @+1 {{graph.slice: slice step must not be 0}}
  %0 = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 5>, steps = array<i64: 0>} : (tensor<5xf32>) -> tensor<5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5xf32>) {
  // expected-error @+1 {{graph.slice: starts, ends, axes and steps must have the same length}}
  %0 = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 5, 1>} : (tensor<5xf32>) -> tensor<5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x5xf32>) {
  // expected-error @+1 {{graph.slice: axes [1, -1] repeat axis 1}}
  %0 = graph.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 5, 5>, axes = array<i64: 1, -1>} : (tensor<5x5xf32>) -> tensor<5x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.pad: pads must have 2 x rank = 4 values, got 2}}
  %0 = graph.pad %x {pads = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.pad: mode must be constant, reflect or edge, got wrap}}
  %0 = graph.pad %x {pads = array<i64: 0, 0, 0, 1>, mode = "wrap"} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.pad: reflect pads [3, 0] of axis 1 must be smaller than its extent 3}}
  %0 = graph.pad %x {pads = array<i64: 0, 3, 0, 0>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.pad: negative pads -2, -1 crop more than the extent 2 of axis 0}}
  %0 = graph.pad %x {pads = array<i64: -2, 0, -1, 0>} : (tensor<2x3xf32>) -> tensor<0x3xf32>
  func.return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{graph.concat: operand #1 has shape [3, 3], which differs from [2, 3] outside axis 1}}
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.concat: missing attribute 'axis'}}
  %0 = graph.concat %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{graph.concat: expects at least one operand}}
  %0 = graph.concat {axis = 0 : i64} : () -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{graph.split: sizes [2, 2] do not sum to the extent 5 of axis 1}}
  %0, %1 = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 2>} : (tensor<4x5xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>)
  func.return
}

// -----

func.func @f(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{graph.split: result type tensor<4x2xf32> does not match the inferred type (tensor<4x2xf32>, tensor<4x3xf32>)}}
  %0 = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 3>} : (tensor<4x5xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @f(%d: tensor<5x3xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{graph.gather: indices element type f32 is not int}}
  %0 = graph.gather %d, %i : (tensor<5x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%d: tensor<f32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{graph.gather: data must have rank >= 1}}
  %0 = graph.gather %d, %i : (tensor<f32>, tensor<2xi64>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{graph.resize: sizes [8, 8] must give a positive extent for each of the 4 dims}}
  %0 = graph.resize %x {sizes = array<i64: 8, 8>} : (tensor<1x3x4x4xf32>) -> tensor<8x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4xi32>) {
  // expected-error @+1 {{graph.resize: operand element type i32 is not float}}
  %0 = graph.resize %x {sizes = array<i64: 1, 3, 8, 8>, mode = "linear"} : (tensor<1x3x4x4xi32>) -> tensor<1x3x8x8xi32>
  func.return
}

// -----

func.func @f(%x: tensor<1x0x4x4xf32>) {
  // expected-error @+1 {{graph.resize: cannot resize axis 1 of extent 0 (no values to sample)}}
  %0 = graph.resize %x {sizes = array<i64: 1, 2, 4, 4>} : (tensor<1x0x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{graph.resize: mode must be nearest or linear}}
  %0 = graph.resize %x {sizes = array<i64: 1, 3, 8, 8>, mode = "cubic"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{graph.resize: coordinate_transformation_mode must be one of half_pixel, asymmetric, align_corners, pytorch_half_pixel, got tf_crop_and_resize}}
  %0 = graph.resize %x {sizes = array<i64: 1, 3, 8, 8>, coordinate_transformation_mode = "tf_crop_and_resize"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+1 {{graph.resize: nearest_mode must be one of round_prefer_floor, round_prefer_ceil, floor, ceil, got up}}
  %0 = graph.resize %x {sizes = array<i64: 1, 3, 8, 8>, nearest_mode = "up"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  func.return
}

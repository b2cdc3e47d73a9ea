// Verifier rules of the simple-ops work (element kinds, pool geometry,
// indices type, det shapes), one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<4xi32>) {
  // expected-error @+1 {{graph.acos: operand element type i32 is not float}}
  %0 = graph.acos %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.bitwise_not: operand element type f32 is not int}}
  %0 = graph.bitwise_not %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{graph.shift_left: operands must have the same element type, got i32, i64}}
  %0 = graph.shift_left %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi32>
  func.return
}

// -----

func.func @f(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // expected-error @+1 {{graph.bitwise_and: operand element type i1 is not int}}
  %0 = graph.bitwise_and %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{graph.max_pool3d: input must be 5-D (N, C, spatial...), got rank 4}}
  %0 = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4x4xf32>) {
  // expected-error @+1 {{graph.avg_pool3d: attribute 'kernel' must be 3 values >= 1, got [2, 2]}}
  %0 = graph.avg_pool3d %x {kernel = array<i64: 2, 2>} : (tensor<1x3x4x4x4xf32>) -> tensor<1x3x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4x4xf32>) {
  // expected-error @+1 {{graph.avg_pool3d: padding must be smaller than the window}}
  %0 = graph.avg_pool3d %x {kernel = array<i64: 2, 2, 2>, padding = array<i64: 2, 0, 0, 0, 0, 0>} : (tensor<1x3x4x4x4xf32>) -> tensor<1x3x5x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4x4xf32>) {
  // expected-error @+1 {{does not match the inferred type tensor<1x3x3x3x3xf32>}}
  %0 = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>} : (tensor<1x3x4x4x4xf32>) -> tensor<1x3x2x2x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>) {
  // expected-error @+1 {{graph.max_pool_with_indices: storage_order must be 0 or 1, got 2}}
  %0, %1 = graph.max_pool_with_indices %x {kernel = array<i64: 2, 2>, storage_order = 2 : i64} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>)
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>) {
  // expected-error @+1 {{does not match the inferred type (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>)}}
  %0, %1 = graph.max_pool_with_indices %x {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi32>)
  func.return
}

// -----

func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{graph.det: input must be square matrices [..., M, M], got shape [2, 3, 4]}}
  %0 = graph.det %x : (tensor<2x3x4xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<3x3xi32>) {
  // expected-error @+1 {{graph.det: operand element type i32 is not float}}
  %0 = graph.det %x : (tensor<3x3xi32>) -> tensor<i32>
  func.return
}

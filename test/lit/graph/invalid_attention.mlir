// Verifier rules of graph.attention, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%q: tensor<2x5x4xf32>) {
  // expected-error @+1 {{graph.attention: q must have rank 4 (batch, heads, rows, features in some order), got [2, 5, 4]}}
  %0 = graph.attention %q, %q, %q {scale = 1.0 : f32} : (tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  func.return
}

// -----

func.func @f(%q: tensor<1x2x5x4xf32>) {
  // expected-error @+1 {{graph.attention: k_perm must be a permutation of 0..3, got [0, 1, 1, 3]}}
  %0 = graph.attention %q, %q, %q {scale = 1.0 : f32, k_perm = array<i64: 0, 1, 1, 3>} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  func.return
}

// -----

func.func @f(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x5x3xf32>) {
  // expected-error @+1 {{graph.attention: q and k must agree on the head size, got 4 and 3}}
  %0 = graph.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x4xf32>
  func.return
}

// -----

func.func @f(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x6x4xf32>, %v: tensor<1x2x7x4xf32>) {
  // expected-error @+1 {{graph.attention: k and v must agree on the key count, got 6 and 7}}
  %0 = graph.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<1x2x5x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  func.return
}

// -----

func.func @f(%q: tensor<1x2x5x4xf32>, %k: tensor<1x3x5x4xf32>) {
  // expected-error @+1 {{graph.attention: q, k and v must agree on (batch, heads), got (1, 2), (1, 3), (1, 3)}}
  %0 = graph.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<1x2x5x4xf32>, tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>) -> tensor<1x2x5x4xf32>
  func.return
}

// -----

func.func @f(%q: tensor<1x2x5x4xf32>, %m: tensor<1x1x5x6xf32>) {
  // expected-error @+1 {{graph.attention: mask of shape [1, 1, 5, 6] does not broadcast to the scores [1, 2, 5, 5]}}
  %0 = graph.attention %q, %q, %q, %m {scale = 1.0 : f32} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x1x5x6xf32>) -> tensor<1x2x5x4xf32>
  func.return
}

// -----

func.func @f(%q: tensor<1x2x5x4xi32>) {
  // expected-error @+1 {{graph.attention: operand element type i32 is not float (op takes float tensors)}}
  %0 = graph.attention %q, %q, %q {scale = 1.0 : f32} : (tensor<1x2x5x4xi32>, tensor<1x2x5x4xi32>, tensor<1x2x5x4xi32>) -> tensor<1x2x5x4xi32>
  func.return
}

// -----

func.func @f(%q: tensor<1x2x5x4xf32>) {
  // expected-error @+1 {{graph.attention: missing attribute 'scale'}}
  %0 = graph.attention %q, %q, %q : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  func.return
}

// -----

func.func @f(%q: tensor<1x2x5x4xf32>) {
  // expected-error @+1 {{graph.attention: result type tensor<1x2x5x4xf32> does not match the inferred type tensor<1x5x2x4xf32>}}
  %0 = graph.attention %q, %q, %q {scale = 1.0 : f32, out_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  func.return
}

// Verifier rules of the reductions and argmax/argmin, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.reduce_sum: axis 2 is out of range for rank 2}}
  %0 = graph.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.reduce_mean: axes [1, -1] repeat an axis}}
  %0 = graph.reduce_mean %x {axes = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x0xf32>) {
  // expected-error @+1 {{graph.reduce_max: cannot reduce axis 1 of extent 0}}
  %0 = graph.reduce_max %x {axes = array<i64: 1>} : (tensor<2x0xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{graph.reduce_sum: operand element type i1 is not float or integer}}
  %0 = graph.reduce_sum %x : (tensor<2x3xi1>) -> tensor<i1>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.reduce_sum: result type tensor<2xf32> does not match the inferred type tensor<2x1xf32>}}
  %0 = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.argmax: axis -3 is out of range for rank 2}}
  %0 = graph.argmax %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<3xi64>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{graph.argmin: result type tensor<2xi32> does not match the inferred type tensor<2xi64>}}
  %0 = graph.argmin %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2xi32>
  func.return
}

// -----

func.func @f(%x: tensor<f32>) {
  // expected-error @+1 {{graph.argmax: axis 0 is out of range for rank 0}}
  %0 = graph.argmax %x : (tensor<f32>) -> tensor<i64>
  func.return
}

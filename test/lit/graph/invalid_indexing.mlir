// Verifier rules of the indexing ops (gather_nd, scatter_nd, scatter_elements, top_k,
// reverse_sequence), one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<2x3xf32>, %i: tensor<4x3xi64>) {
  // expected-error @+1 {{graph.gather_nd: index tuples have 3 entries (last dim of indices), which must be in [1, 2]}}
  %0 = graph.gather_nd %x, %i : (tensor<2x3xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{graph.gather_nd: the first 1 (batch) dims of data [2, 3] and indices [3, 1] must be equal}}
  %0 = graph.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{graph.gather_nd: result type tensor<4x2xf32> does not match the inferred type tensor<4x3xf32>}}
  %0 = graph.gather_nd %x, %i : (tensor<2x3xf32>, tensor<4x1xi64>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x3xf32>, %i: tensor<4x1xi64>, %u: tensor<4x2xf32>) {
  // expected-error @+1 {{graph.scatter_nd: updates shape [4, 2] must be indices.shape[:-1] + data.shape[batch_dims + k:] = [4, 3]}}
  %0 = graph.scatter_nd %x, %i, %u : (tensor<5x3xf32>, tensor<4x1xi64>, tensor<4x2xf32>) -> tensor<5x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x3xf32>, %i: tensor<4x1xi64>, %u: tensor<4x3xf32>) {
  // expected-error @+1 {{graph.scatter_nd: reduction must be one of none, add, mul, max, min, got 'sum'}}
  %0 = graph.scatter_nd %x, %i, %u {reduction = "sum"} : (tensor<5x3xf32>, tensor<4x1xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<3x5xi1>, %i: tensor<3x2xi64>, %u: tensor<3x2xi1>) {
  // expected-error @+1 {{graph.scatter_elements: reduction 'add' needs float or integer data, got i1}}
  %0 = graph.scatter_elements %x, %i, %u {reduction = "add"} : (tensor<3x5xi1>, tensor<3x2xi64>, tensor<3x2xi1>) -> tensor<3x5xi1>
  func.return
}

// -----

func.func @f(%x: tensor<3x5xf32>, %i: tensor<4x2xi64>, %u: tensor<4x2xf32>) {
  // expected-error @+1 {{graph.scatter_elements: indices shape [4, 2] exceeds data shape [3, 5] outside axis 1}}
  %0 = graph.scatter_elements %x, %i, %u {axis = 1 : i64} : (tensor<3x5xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<3x5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<3x5xf32>, %i: tensor<3x2xf32>, %u: tensor<3x2xf32>) {
  // expected-error @+1 {{graph.scatter_elements: indices element type f32 is not int}}
  %0 = graph.scatter_elements %x, %i, %u : (tensor<3x5xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x7xf32>) {
  // expected-error @+1 {{graph.top_k: k = 8 must be in [0, 7] (the extent of axis 1)}}
  %0, %1 = graph.top_k %x {k = 8 : i64} : (tensor<2x7xf32>) -> (tensor<2x8xf32>, tensor<2x8xi64>)
  func.return
}

// -----

func.func @f(%x: tensor<2x7xf32>) {
  // expected-error @+1 {{graph.top_k: missing attribute 'k'}}
  %0, %1 = graph.top_k %x {axis = 1 : i64} : (tensor<2x7xf32>) -> (tensor<2x7xf32>, tensor<2x7xi64>)
  func.return
}

// -----

func.func @f(%x: tensor<2x7xf32>) {
  // expected-error @+1 {{graph.top_k: result type (tensor<2x2xf32>, tensor<2x2xi32>) does not match the inferred type (tensor<2x2xf32>, tensor<2x2xi64>)}}
  %0, %1 = graph.top_k %x {k = 2 : i64, axis = 1 : i64} : (tensor<2x7xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  func.return
}

// -----

func.func @f(%x: tensor<2x7xf32>) {
  // expected-error @+1 {{graph.top_k: unknown attribute 'axiss' (known: k, axis, largest, sorted)}}
  %0, %1 = graph.top_k %x {k = 2 : i64, axiss = 1 : i64} : (tensor<2x7xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  func.return
}

// -----

// A declared attribute of the wrong kind fails even where inference never reads it.
func.func @f(%x: tensor<2x7xf32>) {
  // expected-error @+1 {{graph.top_k: attribute 'sorted' must be an integer like 1 : i64, got "yes"}}
  %0, %1 = graph.top_k %x {k = 2 : i64, sorted = "yes"} : (tensor<2x7xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  func.return
}

// -----

func.func @f(%x: tensor<4x3xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{graph.reverse_sequence: seq_lens shape [4] must be [3] (the batch extent)}}
  %0 = graph.reverse_sequence %x, %l : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x3xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{graph.reverse_sequence: batch_axis and time_axis must differ, both are 0}}
  %0 = graph.reverse_sequence %x, %l {batch_axis = 0 : i64, time_axis = 0 : i64} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  func.return
}

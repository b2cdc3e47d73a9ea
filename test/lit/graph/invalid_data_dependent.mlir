// Verifier rules of the bounded-result ops (nonzero, compress), one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<3x5xf32>) {
  // expected-error @+1 {{graph.nonzero: result type (tensor<2x5xi64>, tensor<i64>) does not match the inferred type (tensor<2x15xi64>, tensor<i64>)}}
  %0, %1 = graph.nonzero %x : (tensor<3x5xf32>) -> (tensor<2x5xi64>, tensor<i64>)
  func.return
}

// -----

func.func @f(%x: tensor<3x5xf32>, %c: tensor<6xi1>) {
  // expected-error @+1 {{graph.compress: condition has 6 entries, more than the 5 of axis 1 of x}}
  %0, %1 = graph.compress %x, %c {axis = 1 : i64} : (tensor<3x5xf32>, tensor<6xi1>) -> (tensor<3x6xf32>, tensor<i64>)
  func.return
}

// -----

func.func @f(%x: tensor<3x5xf32>, %c: tensor<16xi1>) {
  // expected-error @+1 {{graph.compress: condition has 16 entries, more than the 15 of the elements of x}}
  %0, %1 = graph.compress %x, %c : (tensor<3x5xf32>, tensor<16xi1>) -> (tensor<16xf32>, tensor<i64>)
  func.return
}

// -----

func.func @f(%x: tensor<3x5xf32>, %c: tensor<3xi32>) {
  // expected-error @+1 {{graph.compress: condition must be a 1-D i1 tensor, got tensor<3xi32>}}
  %0, %1 = graph.compress %x, %c {axis = 0 : i64} : (tensor<3x5xf32>, tensor<3xi32>) -> (tensor<3x5xf32>, tensor<i64>)
  func.return
}

// -----

func.func @f(%x: tensor<3x5xf32>, %c: tensor<3xi1>) {
  // expected-error @+1 {{graph.compress: axis -2 must be normalized to [0, 2)}}
  %0, %1 = graph.compress %x, %c {axis = -2 : i64} : (tensor<3x5xf32>, tensor<3xi1>) -> (tensor<3x5xf32>, tensor<i64>)
  func.return
}

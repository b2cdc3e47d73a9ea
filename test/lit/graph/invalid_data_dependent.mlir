// Verifier rules of the bounded-result ops (nonzero, compress, unique, non_max_suppression),
// one per chunk.
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

// -----

func.func @f(%x: tensor<3x5xf32>) {
  // expected-error @+1 {{graph.unique: axis 2 is out of range for rank 2}}
  %0, %1, %2, %3, %4 = graph.unique %x {axis = 2 : i64} : (tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>)
  func.return
}

// -----

func.func @f(%b: tensor<1x6x4xf32>, %s: tensor<1x2x5xf32>, %m: tensor<1xi64>, %i: tensor<1xf32>) {
  // expected-error @+1 {{graph.non_max_suppression: scores must be [batches, classes, boxes] = [1, C, 6], got [1, 2, 5]}}
  %0, %1 = graph.non_max_suppression %b, %s, %m, %i : (tensor<1x6x4xf32>, tensor<1x2x5xf32>, tensor<1xi64>, tensor<1xf32>) -> (tensor<12x3xi64>, tensor<i64>)
  func.return
}

// -----

func.func @f(%b: tensor<1x6x3xf32>, %s: tensor<1x2x6xf32>, %m: tensor<1xi64>, %i: tensor<1xf32>) {
  // expected-error @+1 {{graph.non_max_suppression: boxes must be [batches, boxes, 4], got [1, 6, 3]}}
  %0, %1 = graph.non_max_suppression %b, %s, %m, %i : (tensor<1x6x3xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<1xf32>) -> (tensor<12x3xi64>, tensor<i64>)
  func.return
}

// -----

func.func @f(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<2xi64>, %i: tensor<1xf32>) {
  // expected-error @+1 {{graph.non_max_suppression: max_output_boxes_per_class must be one i64, got tensor<2xi64>}}
  %0, %1 = graph.non_max_suppression %b, %s, %m, %i : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<2xi64>, tensor<1xf32>) -> (tensor<12x3xi64>, tensor<i64>)
  func.return
}

// -----

func.func @f(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<1xi64>, %i: tensor<1xf32>) {
  // expected-error @+1 {{graph.non_max_suppression: max_selected_per_class must be >= 0, got -1}}
  %0, %1 = graph.non_max_suppression %b, %s, %m, %i {max_selected_per_class = -1 : i64} : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<1xf32>) -> (tensor<12x3xi64>, tensor<i64>)
  func.return
}

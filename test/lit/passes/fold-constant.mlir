// fold-constant: ops on constants are evaluated; small results stay inline,
// large ones go to the weights store; dead constants disappear.
// RUN: dlc-opt %s --split-input-file -p fold-constant | filecheck %s
// RUN: dlc-opt %s -p 'fold-constant{inline-limit=4}' -o %t.mlir --external-weights
// RUN: filecheck %s --check-prefix=STORE < %t.mlir
// RUN: %python -c "import numpy as n; d = n.load('%t.mlir.weights.npz'); print(sorted(d.files), d['m.mul'].tolist())" | filecheck %s --check-prefix=NPZ
// RUN: dlc-opt %s --split-input-file -p 'fold-constant{size-limit=5}' | filecheck %s --check-prefix=LIMIT

func.func @chain(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = graph.constant dense<2.0> : tensor<f32>
  %m = graph.mul %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %r = graph.add %x, %m : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %m = graph.constant dense<{{\[\[}}2.000000e+00, 4.000000e+00, 6.000000e+00], [8.000000e+00, 1.000000e+01, 1.200000e+01]]> : tensor<2x3xf32>
// CHECK-NEXT:    %r = graph.add %x, %m
// CHECK-NEXT:    func.return %r

// STORE-LABEL: func.func @chain
// STORE-NEXT:    %m = graph.weight "m.mul" : tensor<2x3xf32>
// STORE-NEXT:    %r = graph.add %x, %m
// NPZ: ['m.mul', 'n.mul'] {{\[\[}}2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]

// Above size-limit, an op still folds when its constant operands die with it
// and hold at least as many elements (here 6 + 1 >= 6): nothing more is stored.
// LIMIT-LABEL: func.func @chain
// LIMIT-NEXT:    %m = graph.constant
// LIMIT-NEXT:    %r = graph.add %x, %m

// -----

func.func @shared_operand(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = graph.constant dense<2.0> : tensor<f32>
  %n = graph.mul %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %r = graph.add %x, %n : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = graph.sub %r, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @shared_operand
// CHECK:         %n = graph.constant
// %a stays alive (graph.sub reads it): folding %n would store 6 more elements.
// LIMIT-LABEL: func.func @shared_operand
// LIMIT:         %n = graph.mul %a, %b

// -----

// Integers, bools and multi-result ops fold; an unused result leaves nothing.
func.func @split_compare() -> tensor<3xi1> {
  %a = graph.constant dense<[1, 7, 2, 9, 4]> : tensor<5xi64>
  %p, %q = graph.split %a {axis = 0 : i64, sizes = array<i64: 2, 3>} : (tensor<5xi64>) -> (tensor<2xi64>, tensor<3xi64>)
  %t = graph.constant dense<3> : tensor<i64>
  %c = graph.less %q, %t : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  func.return %c : tensor<3xi1>
}
// CHECK-LABEL: func.func @split_compare
// CHECK-NEXT:    %c = graph.constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-NEXT:    func.return %c

// -----

// Ops on function arguments stay; only their constant inputs fold.
func.func @partial(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.constant dense<4.0> : tensor<f32>
  %s = graph.sqrt %a : (tensor<f32>) -> tensor<f32>
  %y = graph.mul %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %z = graph.exp %y : (tensor<4xf32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}
// CHECK-LABEL: func.func @partial
// CHECK-NEXT:    %s = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %y = graph.mul %x, %s
// CHECK-NEXT:    %z = graph.exp %y

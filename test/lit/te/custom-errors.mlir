// graph.custom errors: the TE's own diagnostic (line:col inside the te string).
// RUN: not dlc-opt %s --split-input-file 2>&1 | filecheck %s
// CHECK-NOT: Traceback

func.func @unknown(%a: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %y = graph.custom %a {te = "Y[i, j] = A[i, j] * B[j]"} : (tensor<5x3xf32>) -> tensor<5x3xf32>
  func.return %y : tensor<5x3xf32>
}
// CHECK: custom-errors.mlir:[[# @LINE - 3]]:3: error: graph.custom: in te: 1:21: unknown tensor 'B' (1 operands, bound to A)

// -----

func.func @syntax(%a: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %y = graph.custom %a {te = "Y[i, j] = A[i, j] *"} : (tensor<5x3xf32>) -> tensor<5x3xf32>
  func.return %y : tensor<5x3xf32>
}
// CHECK: custom-errors.mlir:[[# @LINE - 3]]:3: error: graph.custom: in te: 1:20: expected an expression, found end of input

// -----

func.func @result(%a: tensor<5x3xf32>) -> tensor<5x4xf32> {
  %y = graph.custom %a {te = "Y[i, j] = A[i, j]"} : (tensor<5x3xf32>) -> tensor<5x4xf32>
  func.return %y : tensor<5x4xf32>
}
// CHECK: custom-errors.mlir:[[# @LINE - 3]]:3: error: graph.custom: result type tensor<5x4xf32> does not match the inferred type tensor<5x3xf32>

// -----

func.func @attr(%a: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %y = graph.custom %a {te = "Y[i, j] = A[i, j]", tee = 1 : i64} : (tensor<5x3xf32>) -> tensor<5x3xf32>
  func.return %y : tensor<5x3xf32>
}
// CHECK: custom-errors.mlir:[[# @LINE - 3]]:3: error: graph.custom: unknown attribute 'tee' (known: te)

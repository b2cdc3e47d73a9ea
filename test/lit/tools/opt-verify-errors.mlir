// Verifier failures point at the op's source line (ops remember where they
// were parsed); exit status 1; no traceback.
// RUN: not dlc-opt %s --split-input-file 2>&1 | filecheck %s --strict-whitespace
// RUN: not dlc-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=NOTRACE
// RUN: dlc-opt %s --split-input-file --verify-diagnostics
// NOTRACE-NOT: Traceback

func.func @shape_mismatch(%a: tensor<3x4xf32>, %b: tensor<5xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{graph.add: shapes 3x4 and 5 are not broadcast-compatible}}
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<5xf32>) -> tensor<3x4xf32>
// CHECK:      opt-verify-errors.mlir:[[# @LINE - 1]]:3: error: graph.add: shapes 3x4 and 5 are not broadcast-compatible (dims [4, 5] at axis -1)
// CHECK-NEXT: {{^}}  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<5xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: {{^}}  ^^^^^^^^^^^^^^{{$}}
  func.return %c : tensor<3x4xf32>
}

// -----

func.func @wrong_result(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{does not match the inferred type tensor<3x4xf32>}}
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// CHECK: opt-verify-errors.mlir:[[# @LINE - 1]]:3: error: graph.add: result type tensor<4x4xf32> does not match the inferred type tensor<3x4xf32>
  func.return %a : tensor<3x4xf32>
}

// -----

// A nested op fails: the location is the nested op's, not its function's.
func.func @nested(%a: tensor<3xf32>) -> tensor<3xf32> {
  %b = graph.relu %a : (tensor<3xf32>) -> tensor<3xf32>
  // expected-error @+1 {{'arith.addf' op terminates block}}
  %c = arith.addf %a, %b : tensor<3xf32>
// CHECK: opt-verify-errors.mlir:[[# @LINE - 1]]:3: error: 'arith.addf' op terminates block in single-block region but is not a terminator
}

// -----

// An xDSL (IRDL) verifier, generic syntax.
func.func @generic_form(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.add' op Expected 2 operands, but got 1}}
  %b = "graph.add"(%a) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK: opt-verify-errors.mlir:[[# @LINE - 1]]:3: error: 'graph.add' op Expected 2 operands, but got 1
  func.return %b : tensor<3xf32>
}

// -----

func.func @return_type(%a: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{func.return}}
  func.return %a : tensor<3xf32>
// CHECK: opt-verify-errors.mlir:[[# @LINE - 1]]:3: error: {{.*}}func.return
}

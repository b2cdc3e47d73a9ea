// Syntax errors, unknown ops/dialects: one `file:line:col: error:` line, the
// source line and a caret; exit status 1; no traceback.
// RUN: not dlc-opt %s --split-input-file 2>&1 | filecheck %s --strict-whitespace
// RUN: not dlc-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=NOTRACE
// RUN: dlc-opt %s --split-input-file --verify-diagnostics
// NOTRACE-NOT: Traceback

func.func @missing_operand(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{operand expected}}
  func.return %a, : tensor<3xf32>
// CHECK:      opt-syntax-errors.mlir:[[# @LINE - 1]]:19: error: operand expected
// CHECK-NEXT: {{^}}  func.return %a, : tensor<3xf32>
// CHECK-NEXT: {{^}}                  ^{{$}}
}

// -----

func.func @unknown_op(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{unknown operation 'graph.frobnicate'}}
  %b = graph.frobnicate %a : (tensor<3xf32>) -> tensor<3xf32>
// CHECK:      opt-syntax-errors.mlir:[[# @LINE - 1]]:8: error: unknown operation 'graph.frobnicate'
// CHECK-NEXT: {{^}}  %b = graph.frobnicate %a
// CHECK-NEXT: {{^}}       ^^^^^^^^^^^^^^^^{{$}}
  func.return %b : tensor<3xf32>
}

// -----

func.func @unknown_dialect(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{unknown operation 'nosuch.op': no dialect 'nosuch' is loaded}}
  %b = "nosuch.op"(%a) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK: opt-syntax-errors.mlir:[[# @LINE - 1]]:9: error: unknown operation 'nosuch.op': no dialect 'nosuch' is loaded
  func.return %b : tensor<3xf32>
}

// -----

func.func @type_mismatch(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{has been previously used or defined with type tensor<3xf32>}}
  func.return %a : tensor<4xf32>
// CHECK: opt-syntax-errors.mlir:[[# @LINE - 1]]:15: error: operand is used with type tensor<4xf32>, but has been previously used or defined with type tensor<3xf32>
}

// -----

// expected-error @+1 {{Expected shape type}}
func.func @bad_type(%a: tensor<3xfoo>) -> tensor<3xf32> {
// CHECK: opt-syntax-errors.mlir:[[# @LINE - 1]]:34: error: Expected shape type.
  func.return %a : tensor<3xf32>
}

// -----

func.func @undefined_value() -> tensor<3xf32> {
  // expected-error @+1 {{use of undefined value '%nope'}}
  func.return %nope : tensor<3xf32>
// CHECK: opt-syntax-errors.mlir:[[# @LINE - 1]]:15: error: use of undefined value '%nope'
}

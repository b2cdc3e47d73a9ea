// --verify-diagnostics: exit 0 when every expected error is produced and no
// other; otherwise each mismatch is reported and the exit status is 1.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics
// RUN: sed -e 's/broadcast-compatible}}/compatible-not}}/' %s > %t.wrong-text.mlir
// RUN: not dlc-opt %t.wrong-text.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: sed -e 's/@+1 {{graph.add: shapes/@+2 {{graph.add: shapes/' %s > %t.wrong-line.mlir
// RUN: not dlc-opt %t.wrong-line.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=LINE
// RUN: sed -e 's|^// A chunk without errors.*|// expected-XX @+1 {{never produced}}|; s|^// expected-XX|// expected-error|' %s > %t.missing.mlir
// RUN: not dlc-opt %t.missing.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: sed -e 's/expected-error @+1 {{graph.add//' %s > %t.unexpected.mlir
// RUN: not dlc-opt %t.unexpected.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=UNEXPECTED

func.func @shapes(%a: tensor<3x4xf32>, %b: tensor<5xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{graph.add: shapes 3x4 and 5 are not broadcast-compatible}}
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<5xf32>) -> tensor<3x4xf32>
  func.return %c : tensor<3x4xf32>
}

// -----

// A chunk without errors and without annotations is fine.
func.func @fine(%a: tensor<3xf32>) -> tensor<3xf32> {
  func.return %a : tensor<3xf32>
}

// -----

// Annotation on the same line, and @below.
func.func @same_line(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @below {{operand expected}}
  func.return %a, : tensor<3xf32>
}

// WRONG: error: unexpected error: graph.add: shapes 3x4 and 5 are not broadcast-compatible
// WRONG: error: expected error "graph.add: shapes 3x4 and 5 are not compatible-not" was not produced

// LINE: wrong-line.mlir:15:3: error: unexpected error: graph.add
// LINE: wrong-line.mlir:14:3: error: expected error "graph.add: shapes 3x4 and 5 are not broadcast-compatible" was not produced

// MISSING: missing.mlir:21:1: error: expected error "never produced" was not produced
// MISSING-NOT: unexpected

// UNEXPECTED: unexpected.mlir:15:3: error: unexpected error: graph.add: shapes 3x4 and 5
// UNEXPECTED-NOT: was not produced

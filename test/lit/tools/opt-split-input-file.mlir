// RUN: dlc-opt %s --split-input-file | filecheck %s
// RUN: dlc-opt %s --split-input-file -p cse -o %t.mlir && filecheck %s --check-prefix=CSE < %t.mlir
// Without the flag the markers are plain comments: one module, two functions.
// RUN: dlc-opt %s | filecheck %s --check-prefix=WHOLE

func.func @first(%a: tensor<3xf32>) -> tensor<3xf32> {
  func.return %a : tensor<3xf32>
}

// -----

func.func @second(%a: tensor<2xi32>) -> tensor<2xi32> {
  %b = graph.add %a, %a : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %c = graph.add %a, %a : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %c : tensor<2xi32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @first
// CHECK:      // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @second

// CSE:      func.func @first
// CSE:      // -----
// CSE:      func.func @second
// CSE-NEXT:   %[[SUM:.+]] = graph.add %a, %a
// CSE-NEXT:   func.return %[[SUM]]

// WHOLE:     builtin.module {
// WHOLE:     func.func @first
// WHOLE-NOT: // -----
// WHOLE:     func.func @second

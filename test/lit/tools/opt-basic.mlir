// RUN: dlc-opt %s | filecheck %s
// RUN: dlc-opt %s -p cse | filecheck %s --check-prefix=CSE
// RUN: dlc-opt %s --pipeline=cse,dce | filecheck %s --check-prefix=CSE
// RUN: dlc-opt < %s | filecheck %s
// RUN: dlc-opt - < %s | filecheck %s
// RUN: dlc-opt %s -p cse -o %t.mlir && filecheck %s --check-prefix=CSE < %t.mlir
// RUN: dlc-opt %s --generic | filecheck %s --check-prefix=GENERIC

// Round trip: printing then parsing again gives the same text.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt %s --generic | dlc-opt | filecheck %s

func.func @main(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %d = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %e = graph.mul %c, %d : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %e : tensor<3x4xf32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @main(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
// CHECK-NEXT:     %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:     %d = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:     %e = graph.mul %c, %d : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:     func.return %e : tensor<3x4xf32>

// CSE:      %c = graph.add %a, %b
// CSE-NEXT: %e = graph.mul %c, %c
// CSE-NEXT: func.return %e

// GENERIC: "builtin.module"() ({
// GENERIC: %{{.*}} = "graph.add"(%{{.*}}, %{{.*}}) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// GENERIC: "func.return"

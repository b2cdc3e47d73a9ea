// RUN: dlc-opt %s -p cse,dce --print-ir-after-all 2>&1 >/dev/null | filecheck %s
// RUN: dlc-opt %s -p cse,dce --print-ir-after-all --generic 2>&1 >/dev/null | filecheck %s --check-prefix=GENERIC
// The dumps go to stderr only: stdout holds just the final IR.
// RUN: dlc-opt %s -p cse,dce --print-ir-after-all 2>/dev/null | filecheck %s --check-prefix=STDOUT

func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %b = graph.relu %a : (tensor<3xf32>) -> tensor<3xf32>
  %c = graph.relu %a : (tensor<3xf32>) -> tensor<3xf32>
  %d = graph.add %b, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %d : tensor<3xf32>
}

// CHECK:      // -----// IR Dump After cse //----- //
// CHECK-NEXT: builtin.module {
// CHECK:        %b = graph.relu %a
// CHECK-NEXT:   %d = graph.add %b, %b
// CHECK:      // -----// IR Dump After dce //----- //
// CHECK-NEXT: builtin.module {
// CHECK:        %b = graph.relu %a
// CHECK-NEXT:   %d = graph.add %b, %b
// CHECK-NEXT:   func.return %d

// GENERIC: // -----// IR Dump After cse //----- //
// GENERIC-NEXT: "builtin.module"() ({

// STDOUT-NOT: IR Dump
// STDOUT: builtin.module
// STDOUT-NOT: IR Dump

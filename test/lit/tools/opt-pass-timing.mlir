// RUN: dlc-opt %s -p cse,dce --pass-timing 2>&1 >/dev/null | filecheck %s
// RUN: dlc-opt %s -p cse --pass-timing 2>/dev/null | filecheck %s --check-prefix=STDOUT

func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  func.return %a : tensor<3xf32>
}

// CHECK:      ... Execution time report ...
// CHECK:      Total Execution Time: {{[0-9.]+}} seconds
// CHECK:      ----Wall Time----  ----Name----
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  parse
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  verify
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  cse
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  dce
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  output
// CHECK-NEXT: {{[0-9.]+}} (100.0%)  Total

// STDOUT-NOT: Execution time
// STDOUT: func.func @main

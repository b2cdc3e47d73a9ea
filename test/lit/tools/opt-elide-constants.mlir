// RUN: dlc-opt %s --elide-constants=4 | filecheck %s
// RUN: dlc-opt %s --elide-constants=4 --generic | filecheck %s --check-prefix=GENERIC
// RUN: dlc-opt %s | filecheck %s --check-prefix=FULL
// RUN: dlc-opt %s --elide-constants=0 | filecheck %s --check-prefix=ZERO

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %small = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %four = graph.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %big = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %a = graph.add %x, %small : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = graph.add %a, %big : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %b : tensor<2x3xf32>
}

// CHECK: %small = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK: %four = graph.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
// CHECK: %big = graph.constant dense_resource<__elided__> : tensor<2x3xf32>

// Through Printer.print_attribute (generic form) too.
// GENERIC: "graph.constant"() {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>}
// GENERIC: "graph.constant"() {value = dense<[1, 2, 3, 4]> : tensor<4xi32>}
// GENERIC: "graph.constant"() {value = dense_resource<__elided__> : tensor<2x3xf32>}

// FULL-NOT: __elided__
// FULL: %big = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>

// ZERO-COUNT-3: dense_resource<__elided__>

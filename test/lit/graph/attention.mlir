// Round trips of graph.attention (with and without the mask operand, default and
// folded perms): custom -> print -> parse -> print, and custom -> generic -> custom.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @attn(%q: tensor<1x5x2x4xf32>, %k: tensor<1x5x2x4xf32>, %v: tensor<1x5x2x3xf32>, %m: tensor<1x1x5x7xf32>, %kk: tensor<1x7x2x4xf32>, %vv: tensor<1x7x2x3xf32>, %ql: tensor<2x3x5x4xf32>) {
// CHECK-NEXT:  %0 = graph.attention %q, %k, %v {scale = 5.000000e-01 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 1, 3>, v_perm = array<i64: 0, 2, 1, 3>, out_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x3xf32>) -> tensor<1x5x2x3xf32>
// CHECK-NEXT:  %1 = graph.attention %q, %kk, %vv, %m {scale = 1.250000e-01 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 1, 3>, v_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>, tensor<1x7x2x4xf32>, tensor<1x7x2x3xf32>, tensor<1x1x5x7xf32>) -> tensor<1x2x5x3xf32>
// CHECK-NEXT:  %2 = graph.attention %ql, %ql, %ql {scale = 1.000000e+00 : f32} : (tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x5x4xf32>
// CHECK-NEXT:  func.return
func.func @attn(%q: tensor<1x5x2x4xf32>, %k: tensor<1x5x2x4xf32>, %v: tensor<1x5x2x3xf32>, %m: tensor<1x1x5x7xf32>, %kk: tensor<1x7x2x4xf32>, %vv: tensor<1x7x2x3xf32>, %ql: tensor<2x3x5x4xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 1, 3>, v_perm = array<i64: 0, 2, 1, 3>, out_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x3xf32>) -> tensor<1x5x2x3xf32>
  %1 = graph.attention %q, %kk, %vv, %m {scale = 0.125 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 1, 3>, v_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>, tensor<1x7x2x4xf32>, tensor<1x7x2x3xf32>, tensor<1x1x5x7xf32>) -> tensor<1x2x5x3xf32>
  %2 = graph.attention %ql, %ql, %ql {scale = 1.0 : f32} : (tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x5x4xf32>
  func.return
}

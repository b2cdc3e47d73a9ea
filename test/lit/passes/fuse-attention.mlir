// fuse-attention: softmax(Q K^T * s (+ mask)) V with the head split/merge transposes
// becomes one graph.attention (perms folded in); near misses stay as they are.
// RUN: dlc-opt %s --split-input-file -p fuse-attention | filecheck %s
// RUN: dlc-opt %s --split-input-file -p legalize,fuse-attention | filecheck %s --check-prefix=LEGAL

// BERT/ViT form: no mask, scores divided by sqrt(dh).
func.func @bert(%q: tensor<1x7x3x5xf32>, %k: tensor<1x7x3x5xf32>, %v: tensor<1x7x3x5xf32>) -> (tensor<1x7x3x5xf32>) {
  %ql = graph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x5x7xf32>
  %vl = graph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %s = graph.matmul %ql, %kt : (tensor<1x3x7x5xf32>, tensor<1x3x5x7xf32>) -> tensor<1x3x7x7xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %x0 = graph.div %s, %c : (tensor<1x3x7x7xf32>, tensor<f32>) -> tensor<1x3x7x7xf32>
  %p = graph.softmax %x0 {axis = -1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %o = graph.matmul %p, %vl : (tensor<1x3x7x7xf32>, tensor<1x3x7x5xf32>) -> tensor<1x3x7x5xf32>
  %r = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x7x5xf32>) -> tensor<1x7x3x5xf32>
  func.return %r : tensor<1x7x3x5xf32>
}
// CHECK-LABEL: func.func @bert
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %r = graph.attention %q, %k, %v {scale = 5.000000e-01 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 1, 3>, v_perm = array<i64: 0, 2, 1, 3>, out_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>, tensor<1x7x3x5xf32>, tensor<1x7x3x5xf32>) -> tensor<1x7x3x5xf32>
// CHECK-NEXT:    func.return %r
// after legalize (softmax written out) the pass raises it first and matches the same
// LEGAL-LABEL: func.func @bert
// LEGAL:         graph.attention %q, %k, %v {scale = 5.000000e-01 : f32
// LEGAL-NOT:     graph.matmul
// LEGAL-NOT:     graph.softmax

// -----

// GPT form: causal additive mask (mask + scores), scale as c * s.
func.func @gpt(%q: tensor<1x7x3x5xf32>, %k: tensor<1x7x3x5xf32>, %v: tensor<1x7x3x5xf32>, %m: tensor<1x1x7x7xf32>) -> (tensor<1x7x3x5xf32>) {
  %ql = graph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x5x7xf32>
  %vl = graph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %s = graph.matmul %ql, %kt : (tensor<1x3x7x5xf32>, tensor<1x3x5x7xf32>) -> tensor<1x3x7x7xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %x0 = graph.mul %c, %s : (tensor<f32>, tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %x = graph.add %m, %x0 : (tensor<1x1x7x7xf32>, tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %p = graph.softmax %x {axis = -1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %o = graph.matmul %p, %vl : (tensor<1x3x7x7xf32>, tensor<1x3x7x5xf32>) -> tensor<1x3x7x5xf32>
  %r = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x7x5xf32>) -> tensor<1x7x3x5xf32>
  func.return %r : tensor<1x7x3x5xf32>
}
// CHECK-LABEL: func.func @gpt
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %r = graph.attention %q, %k, %v, %m {scale = 2.000000e+00 : f32, q_perm = array<i64: 0, 2, 1, 3>, k_perm = array<i64: 0, 2, 1, 3>, v_perm = array<i64: 0, 2, 1, 3>, out_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>, tensor<1x7x3x5xf32>, tensor<1x7x3x5xf32>, tensor<1x1x7x7xf32>) -> tensor<1x7x3x5xf32>
// CHECK-NEXT:    func.return %r
// LEGAL-LABEL: func.func @gpt
// LEGAL:         graph.attention %q, %k, %v, %m {scale = 2.000000e+00 : f32

// -----

// Near miss: the mask is added before the scale ((s + m) / c is not s / c + m).
func.func @mask_then_scale(%q: tensor<1x7x3x5xf32>, %k: tensor<1x7x3x5xf32>, %v: tensor<1x7x3x5xf32>, %m: tensor<1x1x7x7xf32>) -> (tensor<1x7x3x5xf32>) {
  %ql = graph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x5x7xf32>
  %vl = graph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %s = graph.matmul %ql, %kt : (tensor<1x3x7x5xf32>, tensor<1x3x5x7xf32>) -> tensor<1x3x7x7xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %a = graph.add %s, %m : (tensor<1x3x7x7xf32>, tensor<1x1x7x7xf32>) -> tensor<1x3x7x7xf32>
  %x = graph.div %a, %c : (tensor<1x3x7x7xf32>, tensor<f32>) -> tensor<1x3x7x7xf32>
  %p = graph.softmax %x {axis = -1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %o = graph.matmul %p, %vl : (tensor<1x3x7x7xf32>, tensor<1x3x7x5xf32>) -> tensor<1x3x7x5xf32>
  %r = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x7x5xf32>) -> tensor<1x7x3x5xf32>
  func.return %r : tensor<1x7x3x5xf32>
}
// CHECK-LABEL: func.func @mask_then_scale
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
// LEGAL-LABEL: func.func @mask_then_scale
// LEGAL-NOT:     graph.attention

// -----

// Near miss: the probabilities are also returned (the score tensor must exist).
func.func @probs_used(%q: tensor<1x7x3x5xf32>, %k: tensor<1x7x3x5xf32>, %v: tensor<1x7x3x5xf32>) -> (tensor<1x7x3x5xf32>, tensor<1x3x7x7xf32>) {
  %ql = graph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x5x7xf32>
  %vl = graph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %s = graph.matmul %ql, %kt : (tensor<1x3x7x5xf32>, tensor<1x3x5x7xf32>) -> tensor<1x3x7x7xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %x0 = graph.div %s, %c : (tensor<1x3x7x7xf32>, tensor<f32>) -> tensor<1x3x7x7xf32>
  %p = graph.softmax %x0 {axis = -1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %o = graph.matmul %p, %vl : (tensor<1x3x7x7xf32>, tensor<1x3x7x5xf32>) -> tensor<1x3x7x5xf32>
  %r = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x7x5xf32>) -> tensor<1x7x3x5xf32>
  func.return %r, %p : tensor<1x7x3x5xf32>, tensor<1x3x7x7xf32>
}
// CHECK-LABEL: func.func @probs_used
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax

// -----

// Near miss: softmax over the query axis, not the keys.
func.func @query_axis(%q: tensor<1x7x3x5xf32>, %k: tensor<1x7x3x5xf32>, %v: tensor<1x7x3x5xf32>) -> (tensor<1x7x3x5xf32>) {
  %ql = graph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x5x7xf32>
  %vl = graph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x7x3x5xf32>) -> tensor<1x3x7x5xf32>
  %s = graph.matmul %ql, %kt : (tensor<1x3x7x5xf32>, tensor<1x3x5x7xf32>) -> tensor<1x3x7x7xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %x0 = graph.div %s, %c : (tensor<1x3x7x7xf32>, tensor<f32>) -> tensor<1x3x7x7xf32>
  %p = graph.softmax %x0 {axis = 2 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %o = graph.matmul %p, %vl : (tensor<1x3x7x7xf32>, tensor<1x3x7x5xf32>) -> tensor<1x3x7x5xf32>
  %r = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x7x5xf32>) -> tensor<1x7x3x5xf32>
  func.return %r : tensor<1x7x3x5xf32>
}
// CHECK-LABEL: func.func @query_axis
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax

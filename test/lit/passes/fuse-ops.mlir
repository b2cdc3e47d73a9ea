// fuse-ops: elementwise ops join their producer's group (dlc.group = N on each member).
// RUN: dlc-opt %s --split-input-file -p fuse-ops | filecheck %s
// RUN: dlc-opt %s --split-input-file -p 'fuse-ops{dense=false}' | filecheck %s --check-prefix=NODENSE
// RUN: dlc-opt %s --split-input-file -p fuse-ops,lower-to-loops | filecheck %s --check-prefix=LOOPS

// conv2d -> bias add -> relu: one group, one kernel named after the chain.
func.func @conv_bias_relu(%x: tensor<1x3x11x7xf32>, %w: tensor<5x3x3x3xf32>, %b: tensor<5x1x1xf32>) -> tensor<1x5x9x5xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x3x11x7xf32>, tensor<5x3x3x3xf32>) -> tensor<1x5x9x5xf32>
  %a = graph.add %y, %b : (tensor<1x5x9x5xf32>, tensor<5x1x1xf32>) -> tensor<1x5x9x5xf32>
  %z = graph.relu %a : (tensor<1x5x9x5xf32>) -> tensor<1x5x9x5xf32>
  func.return %z : tensor<1x5x9x5xf32>
}
// CHECK-LABEL: func.func @conv_bias_relu
// CHECK-NEXT:    %y = graph.conv2d %x, %w {dlc.group = 0 : i64}
// CHECK-NEXT:    %a = graph.add %y, %b {dlc.group = 0 : i64}
// CHECK-NEXT:    %z = graph.relu %a {dlc.group = 0 : i64}
// dense=false leaves conv2d/matmul alone; the elementwise chain is still one group
// NODENSE-LABEL: func.func @conv_bias_relu
// NODENSE-NEXT:    %y = graph.conv2d %x, %w :
// NODENSE-NEXT:    %a = graph.add %y, %b {dlc.group = 0 : i64}
// NODENSE-NEXT:    %z = graph.relu %a {dlc.group = 0 : i64}
// LOOPS:     func.func @conv_bias_relu_[[K:[0-9]+]]_conv2d_add_relu(%x: memref<1x3x11x7xf32>, %w: memref<5x3x3x3xf32>, %extra0: memref<5x1x1xf32>, %out: memref<1x5x9x5xf32>)
// LOOPS-SAME:  tloop.fused = "graph.conv2d+add+relu"
// LOOPS-NOT: func.func @conv_bias_relu_{{.*}}relu
// LOOPS:     func.func @conv_bias_relu(
// LOOPS-NEXT:  func.call @conv_bias_relu_[[K]]_conv2d_add_relu(%x, %w, %b, %result0)
// LOOPS-NEXT:  func.return

// -----

// matmul -> bias -> residual add (the residual is the group's second extra input) -> clip.
func.func @dense_residual(%x: tensor<7x13xf32>, %k: tensor<13x5xf32>, %b: tensor<5xf32>, %r: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %p = graph.matmul %x, %k : (tensor<7x13xf32>, tensor<13x5xf32>) -> tensor<7x5xf32>
  %a = graph.add %p, %b : (tensor<7x5xf32>, tensor<5xf32>) -> tensor<7x5xf32>
  %s = graph.add %r, %a : (tensor<7x5xf32>, tensor<7x5xf32>) -> tensor<7x5xf32>
  %c = graph.clip %s {min = 0.0 : f32, max = 6.0 : f32} : (tensor<7x5xf32>) -> tensor<7x5xf32>
  func.return %c : tensor<7x5xf32>
}
// CHECK-LABEL: func.func @dense_residual
// CHECK-NEXT:    %p = graph.matmul %x, %k {dlc.group = 0 : i64}
// CHECK-NEXT:    %a = graph.add %p, %b {dlc.group = 0 : i64}
// CHECK-NEXT:    %s = graph.add %r, %a {dlc.group = 0 : i64}
// CHECK-NEXT:    %c = graph.clip %s {{.*}}dlc.group = 0 : i64
// LOOPS:     func.func @dense_residual_{{[0-9]+}}_matmul_add_add_clip(%a: memref<7x13xf32>, %b: memref<13x5xf32>, %extra0: memref<5xf32>, %extra1: memref<7x5xf32>, %out: memref<7x5xf32>)

// -----

// What must not fuse:
//  * %e has two users: neither joins it (each user reads the written tensor);
//  * reduce_sum's [7, 1] result is broadcast by the add: the add changes its shape, so it
//    joins %n's group (same type) and not the reduction's;
//  * greater changes the element type (f32 -> i1): it does not join %q;
//  * transpose is not elementwise: the exp after it starts a group of its own.
func.func @negatives(%x: tensor<7x3xf32>, %y: tensor<3xf32>) -> (tensor<7x3xf32>, tensor<7x3xi1>, tensor<7x3xf32>, tensor<3x7xf32>) {
  %e = graph.exp %x : (tensor<7x3xf32>) -> tensor<7x3xf32>
  %n = graph.neg %e : (tensor<7x3xf32>) -> tensor<7x3xf32>
  %m = graph.mul %e, %y : (tensor<7x3xf32>, tensor<3xf32>) -> tensor<7x3xf32>
  %q = graph.sqrt %x : (tensor<7x3xf32>) -> tensor<7x3xf32>
  %g = graph.greater %q, %x : (tensor<7x3xf32>, tensor<7x3xf32>) -> tensor<7x3xi1>
  %s = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<7x3xf32>) -> tensor<7x1xf32>
  %b = graph.add %s, %n : (tensor<7x1xf32>, tensor<7x3xf32>) -> tensor<7x3xf32>
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<7x3xf32>) -> tensor<3x7xf32>
  %u = graph.exp %t : (tensor<3x7xf32>) -> tensor<3x7xf32>
  %v = graph.tanh %u : (tensor<3x7xf32>) -> tensor<3x7xf32>
  func.return %b, %g, %m, %v : tensor<7x3xf32>, tensor<7x3xi1>, tensor<7x3xf32>, tensor<3x7xf32>
}
// CHECK-LABEL: func.func @negatives
// CHECK-NEXT:    %e = graph.exp %x :
// CHECK-NEXT:    %n = graph.neg %e {dlc.group = 0 : i64}
// CHECK-NEXT:    %m = graph.mul %e, %y :
// CHECK-NEXT:    %q = graph.sqrt %x :
// CHECK-NEXT:    %g = graph.greater %q, %x :
// CHECK-NEXT:    %s = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = true} :
// CHECK-NEXT:    %b = graph.add %s, %n {dlc.group = 0 : i64}
// CHECK-NEXT:    %t = graph.transpose %x {perm = array<i64: 1, 0>} :
// CHECK-NEXT:    %u = graph.exp %t {dlc.group = 1 : i64}
// CHECK-NEXT:    %v = graph.tanh %u {dlc.group = 1 : i64}
// one kernel per group or unfused op; the multi-use %e is written once (%buf0) and read twice
// LOOPS-LABEL: func.func @negatives(
// LOOPS:         func.call @negatives_{{[0-9]+}}_exp(%x, %buf0)
// LOOPS:         func.call @negatives_{{[0-9]+}}_mul(%buf0, %y, %result2)
// LOOPS:         func.call @negatives_{{[0-9]+}}_sqrt(%x, %buf1)
// LOOPS:         func.call @negatives_{{[0-9]+}}_greater(%buf1, %x, %result1)
// LOOPS:         func.call @negatives_{{[0-9]+}}_reduce_sum(%x, %buf2)
// LOOPS:         func.call @negatives_{{[0-9]+}}_neg_add(%buf0, %buf2, %result0)
// LOOPS:         func.call @negatives_{{[0-9]+}}_transpose(%x, %buf3)
// LOOPS:         func.call @negatives_{{[0-9]+}}_exp_tanh(%buf3, %result3)

// -----

// Two chains in one function: two groups, numbered in program order; a pool anchors one.
func.func @two_groups(%x: tensor<1x2x5x7xf32>, %c: tensor<2x1x1xf32>) -> (tensor<1x2x4x3xf32>, tensor<1x2x5x7xf32>) {
  %p = graph.max_pool2d %x {kernel = array<i64: 2, 3>, strides = array<i64: 1, 2>} : (tensor<1x2x5x7xf32>) -> tensor<1x2x4x3xf32>
  %a = graph.mul %p, %c : (tensor<1x2x4x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x3xf32>
  %s = graph.sigmoid %x : (tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %q = graph.sqrt %s : (tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  func.return %a, %q : tensor<1x2x4x3xf32>, tensor<1x2x5x7xf32>
}
// CHECK-LABEL: func.func @two_groups
// CHECK-NEXT:    %p = graph.max_pool2d %x {{.*}}dlc.group = 0 : i64
// CHECK-NEXT:    %a = graph.mul %p, %c {dlc.group = 0 : i64}
// CHECK-NEXT:    %s = graph.sigmoid %x {dlc.group = 1 : i64}
// CHECK-NEXT:    %q = graph.sqrt %s {dlc.group = 1 : i64}

// -----

// legalize's softmax / log_softmax expansions become one op again (one kernel);
// not when an intermediate is used elsewhere (%e2 is returned).
func.func @softmax_forms(%x: tensor<3x37xf32>) -> (tensor<3x37xf32>, tensor<3x37xf32>, tensor<3x37xf32>, tensor<3x37xf32>) {
  %m = graph.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x37xf32>) -> tensor<3x1xf32>
  %d = graph.sub %x, %m : (tensor<3x37xf32>, tensor<3x1xf32>) -> tensor<3x37xf32>
  %e = graph.exp %d : (tensor<3x37xf32>) -> tensor<3x37xf32>
  %s = graph.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : (tensor<3x37xf32>) -> tensor<3x1xf32>
  %p = graph.div %e, %s : (tensor<3x37xf32>, tensor<3x1xf32>) -> tensor<3x37xf32>
  %m1 = graph.reduce_max %x {axes = array<i64: -1>, keepdims = true} : (tensor<3x37xf32>) -> tensor<3x1xf32>
  %d1 = graph.sub %x, %m1 : (tensor<3x37xf32>, tensor<3x1xf32>) -> tensor<3x37xf32>
  %e1 = graph.exp %d1 : (tensor<3x37xf32>) -> tensor<3x37xf32>
  %s1 = graph.reduce_sum %e1 {axes = array<i64: -1>, keepdims = true} : (tensor<3x37xf32>) -> tensor<3x1xf32>
  %l1 = graph.log %s1 : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %q = graph.sub %d1, %l1 : (tensor<3x37xf32>, tensor<3x1xf32>) -> tensor<3x37xf32>
  %m2 = graph.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x37xf32>) -> tensor<3x1xf32>
  %d2 = graph.sub %x, %m2 : (tensor<3x37xf32>, tensor<3x1xf32>) -> tensor<3x37xf32>
  %e2 = graph.exp %d2 : (tensor<3x37xf32>) -> tensor<3x37xf32>
  %s2 = graph.reduce_sum %e2 {axes = array<i64: 1>, keepdims = true} : (tensor<3x37xf32>) -> tensor<3x1xf32>
  %r = graph.div %e2, %s2 : (tensor<3x37xf32>, tensor<3x1xf32>) -> tensor<3x37xf32>
  func.return %p, %q, %r, %e2 : tensor<3x37xf32>, tensor<3x37xf32>, tensor<3x37xf32>, tensor<3x37xf32>
}
// CHECK-LABEL: func.func @softmax_forms
// CHECK-NEXT:    %p = graph.softmax %x {axis = 1 : i64} : (tensor<3x37xf32>) -> tensor<3x37xf32>
// CHECK-NEXT:    %q = graph.log_softmax %x {axis = 1 : i64} : (tensor<3x37xf32>) -> tensor<3x37xf32>
// CHECK-NEXT:    %m2 = graph.reduce_max %x
// CHECK-NEXT:    %d2 = graph.sub %x, %m2 {dlc.group = 0 : i64}
// CHECK-NEXT:    %e2 = graph.exp %d2 {dlc.group = 0 : i64}
// CHECK-NEXT:    %s2 = graph.reduce_sum %e2
// CHECK-NEXT:    %r = graph.div %e2, %s2 :

// -----

// matmul -> bias -> erf-GELU (x read twice: a single-exit region): one group, one kernel.
func.func @dense_gelu(%x: tensor<7x13xf32>, %k: tensor<13x5xf32>, %b: tensor<5xf32>) -> tensor<7x5xf32> {
  %p = graph.matmul %x, %k : (tensor<7x13xf32>, tensor<13x5xf32>) -> tensor<7x5xf32>
  %a = graph.add %p, %b : (tensor<7x5xf32>, tensor<5xf32>) -> tensor<7x5xf32>
  %r2 = graph.constant dense<1.4142135> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %d = graph.div %a, %r2 : (tensor<7x5xf32>, tensor<f32>) -> tensor<7x5xf32>
  %e = graph.erf %d : (tensor<7x5xf32>) -> tensor<7x5xf32>
  %q = graph.add %e, %one : (tensor<7x5xf32>, tensor<f32>) -> tensor<7x5xf32>
  %y = graph.mul %a, %q : (tensor<7x5xf32>, tensor<7x5xf32>) -> tensor<7x5xf32>
  func.return %y : tensor<7x5xf32>
}
// CHECK-LABEL: func.func @dense_gelu
// CHECK-NEXT:    %p = graph.matmul %x, %k {dlc.group = 0 : i64}
// CHECK-NEXT:    %a = graph.add %p, %b {dlc.group = 0 : i64}
// CHECK:         %d = graph.div %a, %r2 {dlc.group = 0 : i64}
// CHECK-NEXT:    %e = graph.erf %d {dlc.group = 0 : i64}
// CHECK-NEXT:    %q = graph.add %e, %one {dlc.group = 0 : i64}
// CHECK-NEXT:    %y = graph.mul %a, %q {dlc.group = 0 : i64}
// LOOPS:     func.func @dense_gelu_{{[0-9]+}}_matmul_add_div_erf_add_mul(%a: memref<7x13xf32>, %b: memref<13x5xf32>, %extra0: memref<5xf32>, %extra1: memref<f32>, %extra2: memref<f32>, %out: memref<7x5xf32>)
// LOOPS-SAME:  tloop.fused = "graph.matmul+add+div+erf+add+mul"

// -----

// A scan body (a recurrent cell) is grouped like a function: h*R + x_t -> tanh is one
// group there, and lower-to-loops makes it one kernel called once per step.
func.func @scan_cell(%h0: tensor<1x5xf32>, %xs: tensor<7x1x5xf32>, %r: tensor<5x5xf32>) -> (tensor<1x5xf32>, tensor<7x1x5xf32>) {
  %h, %ys = graph.scan %h0, %xs, %r attributes {num_carried = 1 : i64, num_scan_inputs = 1 : i64} {
  ^bb0(%hc: tensor<1x5xf32>, %xt: tensor<1x5xf32>, %rr: tensor<5x5xf32>):
    %p = graph.matmul %hc, %rr : (tensor<1x5xf32>, tensor<5x5xf32>) -> tensor<1x5xf32>
    %a = graph.add %p, %xt : (tensor<1x5xf32>, tensor<1x5xf32>) -> tensor<1x5xf32>
    %t = graph.tanh %a : (tensor<1x5xf32>) -> tensor<1x5xf32>
    graph.yield %t, %t : (tensor<1x5xf32>, tensor<1x5xf32>) -> ()
  } : (tensor<1x5xf32>, tensor<7x1x5xf32>, tensor<5x5xf32>) -> (tensor<1x5xf32>, tensor<7x1x5xf32>)
  func.return %h, %ys : tensor<1x5xf32>, tensor<7x1x5xf32>
}
// CHECK-LABEL: func.func @scan_cell
// CHECK:         %p = graph.matmul %hc, %rr {dlc.group = 0 : i64}
// CHECK-NEXT:    %a = graph.add %p, %xt {dlc.group = 0 : i64}
// CHECK-NEXT:    %t = graph.tanh %a {dlc.group = 0 : i64}
// CHECK-NEXT:    graph.yield %t, %t
// NODENSE-LABEL: func.func @scan_cell
// NODENSE:         %p = graph.matmul %hc, %rr :
// NODENSE-NEXT:    %a = graph.add %p, %xt {dlc.group = 0 : i64}
// NODENSE-NEXT:    %t = graph.tanh %a {dlc.group = 0 : i64}
// LOOPS:     func.func @scan_cell_{{[0-9]+}}_body_{{[0-9]+}}_matmul_add_tanh(
// LOOPS-SAME:  tloop.fused = "graph.matmul+add+tanh"
// LOOPS-NOT: func.func @scan_cell_{{.*}}_tanh(
// LOOPS:     func.func @scan_cell(
// LOOPS:       scf.for
// LOOPS:         func.call @scan_cell_{{[0-9]+}}_body_{{[0-9]+}}_matmul_add_tanh(

// -----

// An LSTM cell's c' = sigmoid(f) * c + sigmoid(i) * tanh(g): the tanh and the
// sigmoid(i) * tanh(g) group are elementwise producers with one user in the add's group:
// absorbed, one kernel. c' has two users (the yield and tanh(c')): the group's exit.
func.func @lstm_cell(%f: tensor<1x8xf32>, %i: tensor<1x8xf32>, %g: tensor<1x8xf32>, %o: tensor<1x8xf32>, %c: tensor<1x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %si = graph.sigmoid %i : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %sf = graph.sigmoid %f : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %tg = graph.tanh %g : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %fc = graph.mul %sf, %c : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  %ig = graph.mul %si, %tg : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  %c2 = graph.add %fc, %ig : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  %so = graph.sigmoid %o : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %tc = graph.tanh %c2 : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %h = graph.mul %so, %tc : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %h, %c2 : tensor<1x8xf32>, tensor<1x8xf32>
}
// CHECK-LABEL: func.func @lstm_cell
// CHECK-NEXT:    %si = graph.sigmoid %i {dlc.group = [[C:[0-9]+]] : i64}
// CHECK-NEXT:    %sf = graph.sigmoid %f {dlc.group = [[C]] : i64}
// CHECK-NEXT:    %tg = graph.tanh %g {dlc.group = [[C]] : i64}
// CHECK-NEXT:    %fc = graph.mul %sf, %c {dlc.group = [[C]] : i64}
// CHECK-NEXT:    %ig = graph.mul %si, %tg {dlc.group = [[C]] : i64}
// CHECK-NEXT:    %c2 = graph.add %fc, %ig {dlc.group = [[C]] : i64}
// CHECK-NEXT:    %so = graph.sigmoid %o {dlc.group = [[H:[0-9]+]] : i64}
// CHECK-NEXT:    %tc = graph.tanh %c2 {dlc.group = [[H]] : i64}
// CHECK-NEXT:    %h = graph.mul %so, %tc {dlc.group = [[H]] : i64}
// LOOPS: func.func @lstm_cell_{{[0-9]+}}_sigmoid_sigmoid_tanh_mul_mul_add(
// LOOPS: func.func @lstm_cell_{{[0-9]+}}_sigmoid_tanh_mul(

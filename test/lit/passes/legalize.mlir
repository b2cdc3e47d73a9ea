// legalize: composite graph ops become core ops (see transforms/legalize.py).
// RUN: dlc-opt %s -p legalize | filecheck %s
// RUN: dlc-opt %s -p legalize | filecheck %s --check-prefix=GONE
// No composite op is left anywhere:
// GONE-NOT: graph.{{(dense|batch_norm|layer_norm|gelu|softmax|log_softmax|global_avg_pool|global_max_pool|squeeze|unsqueeze|hard_sigmoid|elu|softplus|reciprocal) }}

func.func @dense(%x: tensor<7x13xf32>, %w: tensor<5x13xf32>, %b: tensor<5xf32>) -> tensor<7x5xf32> {
  %y = graph.dense %x, %w, %b : (tensor<7x13xf32>, tensor<5x13xf32>, tensor<5xf32>) -> tensor<7x5xf32>
  func.return %y : tensor<7x5xf32>
}
// CHECK-LABEL: func.func @dense(
// CHECK-NEXT:    %[[WT:[a-z0-9_]+]] = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x13xf32>) -> tensor<13x5xf32>
// CHECK-NEXT:    %[[MM:[a-z0-9_]+]] = graph.matmul %x, %[[WT]] : (tensor<7x13xf32>, tensor<13x5xf32>) -> tensor<7x5xf32>
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = graph.add %[[MM]], %b : (tensor<7x5xf32>, tensor<5xf32>) -> tensor<7x5xf32>
// CHECK-NEXT:    func.return %[[Y]]

func.func @dense_no_bias(%x: tensor<13xf32>, %w: tensor<1x13xf32>) -> tensor<1xf32> {
  %y = graph.dense %x, %w : (tensor<13xf32>, tensor<1x13xf32>) -> tensor<1xf32>
  func.return %y : tensor<1xf32>
}
// CHECK-LABEL: func.func @dense_no_bias(
// CHECK-NEXT:    %[[WT:[a-z0-9_]+]] = graph.transpose %w {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %[[MM:[a-z0-9_]+]] = graph.matmul %x, %[[WT]] : (tensor<13xf32>, tensor<13x1xf32>) -> tensor<1xf32>
// CHECK-NEXT:    func.return %[[MM]]

func.func @batch_norm(%x: tensor<2x5x3x7xf32>, %s: tensor<5xf32>, %b: tensor<5xf32>, %m: tensor<5xf32>, %v: tensor<5xf32>) -> tensor<2x5x3x7xf32> {
  %y = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-03 : f32} : (tensor<2x5x3x7xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x5x3x7xf32>
  func.return %y : tensor<2x5x3x7xf32>
}
// CHECK-LABEL: func.func @batch_norm(
// CHECK-NEXT:    %[[EPS:[a-z0-9_]+]] = graph.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT:    %[[VE:[a-z0-9_]+]] = graph.add %v, %[[EPS]]
// CHECK-NEXT:    %[[INV:[a-z0-9_]+]] = graph.rsqrt %[[VE]]
// CHECK-NEXT:    %[[S:[a-z0-9_]+]] = graph.mul %s, %[[INV]]
// CHECK-NEXT:    %[[MS:[a-z0-9_]+]] = graph.mul %m, %[[S]]
// CHECK-NEXT:    %[[T:[a-z0-9_]+]] = graph.sub %b, %[[MS]]
// CHECK-NEXT:    %[[S4:[a-z0-9_]+]] = graph.reshape %[[S]] {shape = array<i64: 5, 1, 1>} : (tensor<5xf32>) -> tensor<5x1x1xf32>
// CHECK-NEXT:    %[[T4:[a-z0-9_]+]] = graph.reshape %[[T]] {shape = array<i64: 5, 1, 1>}
// CHECK-NEXT:    %[[XS:[a-z0-9_]+]] = graph.mul %x, %[[S4]] : (tensor<2x5x3x7xf32>, tensor<5x1x1xf32>) -> tensor<2x5x3x7xf32>
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = graph.add %[[XS]], %[[T4]]
// CHECK-NEXT:    func.return %[[Y]]

func.func @batch_norm_last_axis(%x: tensor<3x7xf32>, %s: tensor<7xf32>, %b: tensor<7xf32>, %m: tensor<7xf32>, %v: tensor<7xf32>) -> tensor<3x7xf32> {
  %y = graph.batch_norm %x, %s, %b, %m, %v {axis = -1 : i64} : (tensor<3x7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>) -> tensor<3x7xf32>
  func.return %y : tensor<3x7xf32>
}
// The channel axis is the last one: no reshape needed to broadcast.
// CHECK-LABEL: func.func @batch_norm_last_axis(
// CHECK-NOT:     graph.reshape
// CHECK:         %[[XS:[a-z0-9_]+]] = graph.mul %x, %{{.*}} : (tensor<3x7xf32>, tensor<7xf32>) -> tensor<3x7xf32>
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = graph.add %[[XS]], %{{.*}} : (tensor<3x7xf32>, tensor<7xf32>) -> tensor<3x7xf32>
// CHECK-NEXT:    func.return %[[Y]]

func.func @layer_norm(%x: tensor<2x5x13xf32>, %g: tensor<13xf32>, %b: tensor<13xf32>) -> tensor<2x5x13xf32> {
  %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x5x13xf32>, tensor<13xf32>, tensor<13xf32>) -> tensor<2x5x13xf32>
  func.return %y : tensor<2x5x13xf32>
}
// CHECK-LABEL: func.func @layer_norm(
// CHECK-NEXT:    %[[MEAN:[a-z0-9_]+]] = graph.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : (tensor<2x5x13xf32>) -> tensor<2x5x1xf32>
// CHECK-NEXT:    %[[D:[a-z0-9_]+]] = graph.sub %x, %[[MEAN]]
// CHECK-NEXT:    %[[DD:[a-z0-9_]+]] = graph.mul %[[D]], %[[D]]
// CHECK-NEXT:    %[[VAR:[a-z0-9_]+]] = graph.reduce_mean %[[DD]] {axes = array<i64: 2>, keepdims = true}
// CHECK-NEXT:    %[[EPS:[a-z0-9_]+]] = graph.constant dense<1.000000e-05> : tensor<f32>
// CHECK-NEXT:    %[[VE:[a-z0-9_]+]] = graph.add %[[VAR]], %[[EPS]]
// CHECK-NEXT:    %[[INV:[a-z0-9_]+]] = graph.rsqrt %[[VE]]
// CHECK-NEXT:    %[[N:[a-z0-9_]+]] = graph.mul %[[D]], %[[INV]]
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = graph.mul %[[N]], %g
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = graph.add %[[G]], %b
// CHECK-NEXT:    func.return %[[Y]]

func.func @gelu(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = graph.gelu %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK-LABEL: func.func @gelu(
// CHECK-NEXT:    %[[HALF:[a-z0-9_]+]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %[[HX:[a-z0-9_]+]] = graph.mul %x, %[[HALF]]
// CHECK-NEXT:    %[[C:[a-z0-9_]+]] = graph.constant dense<0.707106769> : tensor<f32>
// CHECK-NEXT:    %[[XC:[a-z0-9_]+]] = graph.mul %x, %[[C]]
// CHECK-NEXT:    %[[ERF:[a-z0-9_]+]] = graph.erf %[[XC]]
// CHECK-NEXT:    %[[ONE:[a-z0-9_]+]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[P:[a-z0-9_]+]] = graph.add %[[ERF]], %[[ONE]]
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = graph.mul %[[HX]], %[[P]]
// CHECK-NEXT:    func.return %[[Y]]

func.func @gelu_tanh(%x: tensor<3xf64>) -> tensor<3xf64> {
  %y = graph.gelu %x {approximate = "tanh"} : (tensor<3xf64>) -> tensor<3xf64>
  func.return %y : tensor<3xf64>
}
// Constants take the operand's element type (f64 here).
// CHECK-LABEL: func.func @gelu_tanh(
// CHECK-NOT:     graph.erf
// CHECK:         graph.constant dense<4.471500e-02> : tensor<f64>
// CHECK:         graph.constant dense<0.79788456080286541> : tensor<f64>
// CHECK:         graph.tanh
// CHECK-NOT:     graph.gelu
// CHECK:         func.return

func.func @softmax(%x: tensor<2x7xf32>) -> tensor<2x7xf32> {
  %y = graph.softmax %x {axis = 0 : i64} : (tensor<2x7xf32>) -> tensor<2x7xf32>
  func.return %y : tensor<2x7xf32>
}
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:    %[[MAX:[a-z0-9_]+]] = graph.reduce_max %x {axes = array<i64: 0>, keepdims = true} : (tensor<2x7xf32>) -> tensor<1x7xf32>
// CHECK-NEXT:    %[[D:[a-z0-9_]+]] = graph.sub %x, %[[MAX]]
// CHECK-NEXT:    %[[E:[a-z0-9_]+]] = graph.exp %[[D]]
// CHECK-NEXT:    %[[SUM:[a-z0-9_]+]] = graph.reduce_sum %[[E]] {axes = array<i64: 0>, keepdims = true}
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = graph.div %[[E]], %[[SUM]] : (tensor<2x7xf32>, tensor<1x7xf32>) -> tensor<2x7xf32>
// CHECK-NEXT:    func.return %[[Y]]

func.func @log_softmax(%x: tensor<2x7xf32>) -> tensor<2x7xf32> {
  %y = graph.log_softmax %x : (tensor<2x7xf32>) -> tensor<2x7xf32>
  func.return %y : tensor<2x7xf32>
}
// CHECK-LABEL: func.func @log_softmax(
// CHECK-NEXT:    %[[MAX:[a-z0-9_]+]] = graph.reduce_max %x {axes = array<i64: -1>, keepdims = true}
// CHECK-NEXT:    %[[D:[a-z0-9_]+]] = graph.sub %x, %[[MAX]]
// CHECK-NEXT:    %[[E:[a-z0-9_]+]] = graph.exp %[[D]]
// CHECK-NEXT:    %[[SUM:[a-z0-9_]+]] = graph.reduce_sum %[[E]] {axes = array<i64: -1>, keepdims = true}
// CHECK-NEXT:    %[[LOG:[a-z0-9_]+]] = graph.log %[[SUM]]
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = graph.sub %[[D]], %[[LOG]]
// CHECK-NEXT:    func.return %[[Y]]

func.func @global_pools(%x: tensor<1x3x5x7xf32>) -> (tensor<1x3x1x1xf32>, tensor<1x1x1x7xf32>) {
  %a = graph.global_avg_pool %x : (tensor<1x3x5x7xf32>) -> tensor<1x3x1x1xf32>
  %m = graph.global_max_pool %x {layout = "NHWC"} : (tensor<1x3x5x7xf32>) -> tensor<1x1x1x7xf32>
  func.return %a, %m : tensor<1x3x1x1xf32>, tensor<1x1x1x7xf32>
}
// CHECK-LABEL: func.func @global_pools(
// CHECK-NEXT:    %a = graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x3x5x7xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT:    %m = graph.reduce_max %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x3x5x7xf32>) -> tensor<1x1x1x7xf32>
// CHECK-NEXT:    func.return %a, %m

func.func @squeeze_unsqueeze(%x: tensor<1x3x1x5xf32>) -> tensor<3x1x5x1xf32> {
  %s = graph.squeeze %x {axes = array<i64: 0>} : (tensor<1x3x1x5xf32>) -> tensor<3x1x5xf32>
  %u = graph.unsqueeze %s {axes = array<i64: 3>} : (tensor<3x1x5xf32>) -> tensor<3x1x5x1xf32>
  func.return %u : tensor<3x1x5x1xf32>
}
// CHECK-LABEL: func.func @squeeze_unsqueeze(
// CHECK-NEXT:    %s = graph.reshape %x {shape = array<i64: 3, 1, 5>} : (tensor<1x3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:    %u = graph.reshape %s {shape = array<i64: 3, 1, 5, 1>} : (tensor<3x1x5xf32>) -> tensor<3x1x5x1xf32>
// CHECK-NEXT:    func.return %u

func.func @activations(%x: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) {
  %h = graph.hard_sigmoid %x {alpha = 0.25 : f32, beta = 0.5 : f32} : (tensor<5xf32>) -> tensor<5xf32>
  %e = graph.elu %x {alpha = 2.0 : f32} : (tensor<5xf32>) -> tensor<5xf32>
  %s = graph.softplus %x : (tensor<5xf32>) -> tensor<5xf32>
  %r = graph.reciprocal %x : (tensor<5xf32>) -> tensor<5xf32>
  func.return %h, %e, %s, %r : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>
}
// CHECK-LABEL: func.func @activations(
// hard_sigmoid: clip(x * alpha + beta, 0, 1)
// CHECK-NEXT:    %[[A:[a-z0-9_]+]] = graph.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT:    %[[B:[a-z0-9_]+]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %[[AX:[a-z0-9_]+]] = graph.mul %x, %[[A]]
// CHECK-NEXT:    %[[AXB:[a-z0-9_]+]] = graph.add %[[AX]], %[[B]]
// CHECK-NEXT:    %[[H:[a-z0-9_]+]] = graph.clip %[[AXB]] {min = 0.000000e+00 : f32, max = 1.000000e+00 : f32}
// elu: where(x > 0, x, alpha * (exp(x) - 1))
// CHECK-NEXT:    %[[EX:[a-z0-9_]+]] = graph.exp %x
// CHECK-NEXT:    %[[ONE:[a-z0-9_]+]] = graph.constant dense<1.000000e+00>
// CHECK-NEXT:    %[[EM1:[a-z0-9_]+]] = graph.sub %[[EX]], %[[ONE]]
// CHECK-NEXT:    %[[ALPHA:[a-z0-9_]+]] = graph.constant dense<2.000000e+00>
// CHECK-NEXT:    %[[NEG:[a-z0-9_]+]] = graph.mul %[[EM1]], %[[ALPHA]]
// CHECK-NEXT:    %[[ZERO:[a-z0-9_]+]] = graph.constant dense<0.000000e+00>
// CHECK-NEXT:    %[[POS:[a-z0-9_]+]] = graph.greater %x, %[[ZERO]] : (tensor<5xf32>, tensor<f32>) -> tensor<5xi1>
// CHECK-NEXT:    %[[E:[a-z0-9_]+]] = graph.where %[[POS]], %x, %[[NEG]]
// softplus: max(x, 0) + log1p(exp(-|x|)), log1p(e) = where(u == 1, e, log(u) * e / (u - 1))
// CHECK-NEXT:    %[[ONE2:[a-z0-9_]+]] = graph.constant dense<1.000000e+00>
// CHECK-NEXT:    %[[ABS:[a-z0-9_]+]] = graph.abs %x
// CHECK-NEXT:    %[[NABS:[a-z0-9_]+]] = graph.neg %[[ABS]]
// CHECK-NEXT:    %[[SMALL:[a-z0-9_]+]] = graph.exp %[[NABS]]
// CHECK-NEXT:    %[[U:[a-z0-9_]+]] = graph.add %[[SMALL]], %[[ONE2]]
// CHECK-NEXT:    %[[LOGU:[a-z0-9_]+]] = graph.log %[[U]]
// CHECK-NEXT:    %[[NUM:[a-z0-9_]+]] = graph.mul %[[LOGU]], %[[SMALL]]
// CHECK-NEXT:    %[[DEN:[a-z0-9_]+]] = graph.sub %[[U]], %[[ONE2]]
// CHECK-NEXT:    %[[RATIO:[a-z0-9_]+]] = graph.div %[[NUM]], %[[DEN]]
// CHECK-NEXT:    %[[EXACT:[a-z0-9_]+]] = graph.equal %[[U]], %[[ONE2]]
// CHECK-NEXT:    %[[LOG1P:[a-z0-9_]+]] = graph.where %[[EXACT]], %[[SMALL]], %[[RATIO]]
// CHECK-NEXT:    %[[ZERO2:[a-z0-9_]+]] = graph.constant dense<0.000000e+00>
// CHECK-NEXT:    %[[RELU:[a-z0-9_]+]] = graph.max %x, %[[ZERO2]]
// CHECK-NEXT:    %[[S:[a-z0-9_]+]] = graph.add %[[RELU]], %[[LOG1P]]
// reciprocal: 1 / x
// CHECK-NEXT:    %[[ONE3:[a-z0-9_]+]] = graph.constant dense<1.000000e+00>
// CHECK-NEXT:    %[[R:[a-z0-9_]+]] = graph.div %[[ONE3]], %x : (tensor<f32>, tensor<5xf32>) -> tensor<5xf32>
// CHECK-NEXT:    func.return %[[H]], %[[E]], %[[S]], %[[R]]

// Core ops pass through unchanged.
func.func @core(%x: tensor<5xf32>) -> tensor<5xf32> {
  %y = graph.rsqrt %x : (tensor<5xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}
// CHECK-LABEL: func.func @core(
// CHECK-NEXT:    %y = graph.rsqrt %x : (tensor<5xf32>) -> tensor<5xf32>
// CHECK-NEXT:    func.return %y

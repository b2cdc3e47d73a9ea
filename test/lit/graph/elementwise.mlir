// Round trips of the elementwise ops (unary with inverse trig, cast, binary with
// broadcasting, bitwise and shifts, where): custom -> print -> parse -> print, and
// custom -> generic -> custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @unary(%x: tensor<3x1x5xf32>, %i: tensor<7xi32>, %b: tensor<2x3xi1>, %h: tensor<4xf16>) {
// CHECK-NEXT:  %0 = graph.neg %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %1 = graph.neg %i : (tensor<7xi32>) -> tensor<7xi32>
// CHECK-NEXT:  %2 = graph.abs %i : (tensor<7xi32>) -> tensor<7xi32>
// CHECK-NEXT:  %3 = graph.sign %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %4 = graph.exp %h : (tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  %5 = graph.log %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %6 = graph.sqrt %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %7 = graph.rsqrt %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %8 = graph.reciprocal %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %9 = graph.tanh %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %10 = graph.sigmoid %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %11 = graph.relu %i : (tensor<7xi32>) -> tensor<7xi32>
// CHECK-NEXT:  %12 = graph.erf %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %13 = graph.floor %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %14 = graph.ceil %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %15 = graph.round %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %16 = graph.sin %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %17 = graph.cos %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %18 = graph.softplus %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %19 = graph.not %b : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  %20 = graph.gelu %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %21 = graph.gelu %x {approximate = "tanh"} : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %22 = graph.clip %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %23 = graph.clip %i {min = -1 : i64} : (tensor<7xi32>) -> tensor<7xi32>
// CHECK-NEXT:  %24 = graph.leaky_relu %x {alpha = 1.000000e-01 : f32} : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %25 = graph.elu %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %26 = graph.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %27 = graph.cast %x {to = i32} : (tensor<3x1x5xf32>) -> tensor<3x1x5xi32>
// CHECK-NEXT:  %28 = graph.cast %i {to = i1} : (tensor<7xi32>) -> tensor<7xi1>
// CHECK-NEXT:  %29 = graph.cast %h {to = f64} : (tensor<4xf16>) -> tensor<4xf64>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @unary(%x: tensor<3x1x5xf32>, %i: tensor<7xi32>, %b: tensor<2x3xi1>, %h: tensor<4xf16>) {
  %0 = graph.neg %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %1 = graph.neg %i : (tensor<7xi32>) -> tensor<7xi32>
  %2 = graph.abs %i : (tensor<7xi32>) -> tensor<7xi32>
  %3 = graph.sign %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %4 = graph.exp %h : (tensor<4xf16>) -> tensor<4xf16>
  %5 = graph.log %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %6 = graph.sqrt %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %7 = graph.rsqrt %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %8 = graph.reciprocal %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %9 = graph.tanh %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %10 = graph.sigmoid %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %11 = graph.relu %i : (tensor<7xi32>) -> tensor<7xi32>
  %12 = graph.erf %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %13 = graph.floor %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %14 = graph.ceil %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %15 = graph.round %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %16 = graph.sin %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %17 = graph.cos %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %18 = graph.softplus %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %19 = graph.not %b : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %20 = graph.gelu %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %21 = graph.gelu %x {approximate = "tanh"} : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %22 = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %23 = graph.clip %i {min = -1 : i64} : (tensor<7xi32>) -> tensor<7xi32>
  %24 = graph.leaky_relu %x {alpha = 0.1 : f32} : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %25 = graph.elu %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %26 = graph.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %27 = graph.cast %x {to = i32} : (tensor<3x1x5xf32>) -> tensor<3x1x5xi32>
  %28 = graph.cast %i {to = i1} : (tensor<7xi32>) -> tensor<7xi1>
  %29 = graph.cast %h {to = f64} : (tensor<4xf16>) -> tensor<4xf64>
  func.return
}

// CHECK-LABEL: func.func @binary(%a: tensor<3x1x5xf32>, %b: tensor<7x1xf32>, %s: tensor<f32>, %i: tensor<2x3xi64>, %j: tensor<3xi64>, %p: tensor<2x3xi1>, %q: tensor<1xi1>) {
// CHECK-NEXT:  %0 = graph.add %a, %b : (tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xf32>
// CHECK-NEXT:  %1 = graph.sub %a, %s : (tensor<3x1x5xf32>, tensor<f32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %2 = graph.mul %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:  %3 = graph.div %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:  %4 = graph.pow %a, %s : (tensor<3x1x5xf32>, tensor<f32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %5 = graph.mod %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:  %6 = graph.max %a, %b : (tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xf32>
// CHECK-NEXT:  %7 = graph.min %a, %b : (tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xf32>
// CHECK-NEXT:  %8 = graph.equal %p, %q : (tensor<2x3xi1>, tensor<1xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  %9 = graph.not_equal %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:  %10 = graph.less %a, %b : (tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xi1>
// CHECK-NEXT:  %11 = graph.less_equal %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:  %12 = graph.greater %a, %s : (tensor<3x1x5xf32>, tensor<f32>) -> tensor<3x1x5xi1>
// CHECK-NEXT:  %13 = graph.greater_equal %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:  %14 = graph.and %p, %q : (tensor<2x3xi1>, tensor<1xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  %15 = graph.or %p, %q : (tensor<2x3xi1>, tensor<1xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  %16 = graph.xor %p, %q : (tensor<2x3xi1>, tensor<1xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  %17 = graph.where %q, %a, %b : (tensor<1xi1>, tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @binary(%a: tensor<3x1x5xf32>, %b: tensor<7x1xf32>, %s: tensor<f32>, %i: tensor<2x3xi64>, %j: tensor<3xi64>, %p: tensor<2x3xi1>, %q: tensor<1xi1>) {
  %0 = graph.add %a, %b : (tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xf32>
  %1 = graph.sub %a, %s : (tensor<3x1x5xf32>, tensor<f32>) -> tensor<3x1x5xf32>
  %2 = graph.mul %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %3 = graph.div %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %4 = graph.pow %a, %s : (tensor<3x1x5xf32>, tensor<f32>) -> tensor<3x1x5xf32>
  %5 = graph.mod %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %6 = graph.max %a, %b : (tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xf32>
  %7 = graph.min %a, %b : (tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xf32>
  %8 = graph.equal %p, %q : (tensor<2x3xi1>, tensor<1xi1>) -> tensor<2x3xi1>
  %9 = graph.not_equal %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %10 = graph.less %a, %b : (tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xi1>
  %11 = graph.less_equal %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %12 = graph.greater %a, %s : (tensor<3x1x5xf32>, tensor<f32>) -> tensor<3x1x5xi1>
  %13 = graph.greater_equal %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %14 = graph.and %p, %q : (tensor<2x3xi1>, tensor<1xi1>) -> tensor<2x3xi1>
  %15 = graph.or %p, %q : (tensor<2x3xi1>, tensor<1xi1>) -> tensor<2x3xi1>
  %16 = graph.xor %p, %q : (tensor<2x3xi1>, tensor<1xi1>) -> tensor<2x3xi1>
  %17 = graph.where %q, %a, %b : (tensor<1xi1>, tensor<3x1x5xf32>, tensor<7x1xf32>) -> tensor<3x7x5xf32>
  func.return
}

// CHECK-LABEL: func.func @trig(%x: tensor<3x1x5xf32>, %h: tensor<4xf16>, %d: tensor<7xf64>) {
// CHECK-NEXT:  %0 = graph.acos %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NEXT:  %1 = graph.asin %h : (tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  %2 = graph.atan %d : (tensor<7xf64>) -> tensor<7xf64>
// CHECK-NEXT:  func.return
func.func @trig(%x: tensor<3x1x5xf32>, %h: tensor<4xf16>, %d: tensor<7xf64>) {
  %0 = graph.acos %x : (tensor<3x1x5xf32>) -> tensor<3x1x5xf32>
  %1 = graph.asin %h : (tensor<4xf16>) -> tensor<4xf16>
  %2 = graph.atan %d : (tensor<7xf64>) -> tensor<7xf64>
  func.return
}

// CHECK-LABEL: func.func @bitwise(%a: tensor<2x3xi32>, %b: tensor<3xi32>, %u: tensor<5xui8>, %v: tensor<1xui8>, %l: tensor<7xi64>) {
// CHECK-NEXT:  %0 = graph.bitwise_not %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:  %1 = graph.bitwise_and %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:  %2 = graph.bitwise_or %u, %v : (tensor<5xui8>, tensor<1xui8>) -> tensor<5xui8>
// CHECK-NEXT:  %3 = graph.bitwise_xor %l, %l : (tensor<7xi64>, tensor<7xi64>) -> tensor<7xi64>
// CHECK-NEXT:  %4 = graph.shift_left %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:  %5 = graph.shift_right %u, %v : (tensor<5xui8>, tensor<1xui8>) -> tensor<5xui8>
// CHECK-NEXT:  func.return
func.func @bitwise(%a: tensor<2x3xi32>, %b: tensor<3xi32>, %u: tensor<5xui8>, %v: tensor<1xui8>, %l: tensor<7xi64>) {
  %0 = graph.bitwise_not %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %1 = graph.bitwise_and %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %2 = graph.bitwise_or %u, %v : (tensor<5xui8>, tensor<1xui8>) -> tensor<5xui8>
  %3 = graph.bitwise_xor %l, %l : (tensor<7xi64>, tensor<7xi64>) -> tensor<7xi64>
  %4 = graph.shift_left %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %5 = graph.shift_right %u, %v : (tensor<5xui8>, tensor<1xui8>) -> tensor<5xui8>
  func.return
}

// graph.softsign (x / (1 + |x|)), the example op of docs/adding-an-op.md.
// CHECK-LABEL: func.func @softsign(%x: tensor<3x1x7xf32>, %h: tensor<5xf16>) {
// CHECK-NEXT:  %0 = graph.softsign %x : (tensor<3x1x7xf32>) -> tensor<3x1x7xf32>
// CHECK-NEXT:  %1 = graph.softsign %h : (tensor<5xf16>) -> tensor<5xf16>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @softsign(%x: tensor<3x1x7xf32>, %h: tensor<5xf16>) {
  %0 = graph.softsign %x : (tensor<3x1x7xf32>) -> tensor<3x1x7xf32>
  %1 = graph.softsign %h : (tensor<5xf16>) -> tensor<5xf16>
  func.return
}

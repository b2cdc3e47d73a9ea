// Verifier rules of the elementwise ops and the shared GraphOp checks, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<4xf8E3M4>) {
  // expected-error @+1 {{graph.neg: operand #0: element type f8E3M4 is not supported}}
  %0 = graph.neg %x : (tensor<4xf8E3M4>) -> tensor<4xf8E3M4>
  func.return
}

// -----

func.func @f(%x: tensor<4xi3>) {
  // expected-error @+1 {{element type i3 is not supported}}
  %0 = graph.neg %x : (tensor<4xi3>) -> tensor<4xi3>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.neg: result type tensor<5xf32> does not match the inferred type tensor<4xf32>}}
  %0 = graph.neg %x : (tensor<4xf32>) -> tensor<5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xi32>) {
  // expected-error @+1 {{graph.exp: operand element type i32 is not float}}
  %0 = graph.exp %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @f(%x: tensor<4xi1>) {
  // expected-error @+1 {{graph.relu: operand element type i1 is not float or integer}}
  %0 = graph.relu %x : (tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.not: operand element type f32 is not bool}}
  %0 = graph.not %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.gelu: attribute 'approximate' must be "none" or "tanh"}}
  %0 = graph.gelu %x {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.clip: attribute 'min' must be a number like 1.0 : f32}}
  %0 = graph.clip %x {min = "zero"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.leaky_relu: attribute 'alpha' must be a number}}
  %0 = graph.leaky_relu %x {alpha = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.cast: missing attribute 'to'}}
  %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.cast: attribute 'to' must be a type like f32}}
  %0 = graph.cast %x {to = 3 : i64} : (tensor<4xf32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.cast: element type index is not supported}}
  %0 = graph.cast %x {to = index} : (tensor<4xf32>) -> tensor<4xindex>
  func.return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{graph.add: shapes 2x3 and 4 are not broadcast-compatible (dims [3, 4] at axis -1)}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f(%a: tensor<3xf32>, %b: tensor<3xf64>) {
  // expected-error @+1 {{graph.mul: operands must have the same element type, got f32, f64}}
  %0 = graph.mul %a, %b : (tensor<3xf32>, tensor<3xf64>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{graph.less: result type tensor<3xf32> does not match the inferred type tensor<3xi1>}}
  %0 = graph.less %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%a: tensor<3xi32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{graph.and: operand element type i32 is not bool}}
  %0 = graph.and %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
  func.return
}

// -----

func.func @f(%c: tensor<3xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{graph.where: condition element type f32 is not bool}}
  %0 = graph.where %c, %a, %a : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{graph.where: operands must have the same element type, got f32, i32}}
  %0 = graph.where %c, %a, %b : (tensor<3xi1>, tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.softmax: unknown attribute 'axiss' (known: axis)}}
  %0 = graph.softmax %x {axiss = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.relu: unknown attribute 'alpha' (known: none)}}
  %0 = graph.relu %x {alpha = 0.1 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{Expected 1 operand}}
  %0 = "graph.neg"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4xi32>) {
  // expected-error @+1 {{graph.acos: operand element type i32 is not float}}
  %0 = graph.acos %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.bitwise_not: operand element type f32 is not int}}
  %0 = graph.bitwise_not %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{graph.shift_left: operands must have the same element type, got i32, i64}}
  %0 = graph.shift_left %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi32>
  func.return
}

// -----

func.func @f(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // expected-error @+1 {{graph.bitwise_and: operand element type i1 is not int}}
  %0 = graph.bitwise_and %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @f(%x: tensor<4xi32>) {
  // expected-error @+1 {{graph.softsign: operand element type i32 is not float}}
  %0 = graph.softsign %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.softsign: result type tensor<4xf16> does not match the inferred type tensor<4xf32>}}
  %0 = graph.softsign %x : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// Verifier and parser rules of graph.constant and graph.weight, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f() {
  // expected-error @+1 {{graph.constant: result type tensor<3xf32> does not match the inferred type tensor<2xf32>}}
  %0 = "graph.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<3xf32>
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'value' expected in operation 'graph.constant'}}
  %0 = "graph.constant"() : () -> tensor<3xf32>
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{graph.constant: element type f8E3M4 is not supported}}
  %0 = graph.constant dense<[1.0, 2.0]> : tensor<2xf8E3M4>
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{graph.constant expects a dense elements attribute like dense<...> : tensor<...>}}
  %0 = graph.constant 3 : i32
  func.return
}

// -----

func.func @f(%x: tensor<2xf32>) {
  // expected-error @+1 {{Expected 0 operands}}
  %0 = "graph.weight"(%x) {name = "w"} : (tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{weight name}}
  %0 = graph.weight w : tensor<2xf32>
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{graph.weight: unknown attribute 'shape' (known: name)}}
  %0 = graph.weight "w" {shape = array<i64: 2>} : tensor<2xf32>
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{graph.constant: unknown attribute 'valu' (known: value)}}
  %0 = graph.constant {valu = 1 : i64} dense<1.0> : tensor<2xf32>
  func.return
}

// Verifier rules of narrow (storage-only) element types, one per chunk: only
// graph.cast, constants and data-movement ops accept them.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<4xbf16>) {
  // expected-error @+1 {{graph.pad: operand #0 has the storage-only element type bf16 (only graph.cast and data-movement ops accept it; compute in f32)}}
  %0 = graph.pad %x {pads = array<i64: 1, 1>} : (tensor<4xbf16>) -> tensor<6xbf16>
  func.return
}

// -----

func.func @f(%x: tensor<4xi4>, %y: tensor<4xi4>) {
  // expected-error @+1 {{graph.add: operand element type i4 is not float or integer}}
  %0 = graph.add %x, %y : (tensor<4xi4>, tensor<4xi4>) -> tensor<4xi4>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.cast: round_mode must be up, down or nearest, got 'sideways'}}
  %0 = graph.cast %x {to = f8E8M0FNU, round_mode = "sideways"} : (tensor<4xf32>) -> tensor<4xf8E8M0FNU>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.cast: attribute 'saturate' must be an integer like 1 : i64, got "no"}}
  %0 = graph.cast %x {to = f8E4M3FN, saturate = "no"} : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.cast: element type f8E3M4 is not supported}}
  %0 = graph.cast %x {to = f8E3M4} : (tensor<4xf32>) -> tensor<4xf8E3M4>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{graph.cast: result type tensor<4xf8E5M2> does not match the inferred type tensor<4xf8E4M3FN>}}
  %0 = graph.cast %x {to = f8E4M3FN} : (tensor<4xf32>) -> tensor<4xf8E5M2>
  func.return
}

// Verifier rules of the region ops, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%c: tensor<i1>, %x: tensor<3xf32>) {
  // expected-error @+1 {{graph.if: then body yields (tensor<3xf32>) but else body yields (tensor<3xi32>); both must yield the same types}}
  %r = graph.if %c, %x {
  ^bb0(%a: tensor<3xf32>):
    graph.yield %a : (tensor<3xf32>) -> ()
  } {
  ^bb0(%a: tensor<3xf32>):
    %i = graph.cast %a {to = i32} : (tensor<3xf32>) -> tensor<3xi32>
    graph.yield %i : (tensor<3xi32>) -> ()
  } : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%c: tensor<2xi1>, %x: tensor<3xf32>) {
  // expected-error @+1 {{graph.if: condition must hold one element, got tensor<2xi1>}}
  %r = graph.if %c, %x {
  ^bb0(%a: tensor<3xf32>):
    graph.yield %a : (tensor<3xf32>) -> ()
  } {
  ^bb0(%a: tensor<3xf32>):
    graph.yield %a : (tensor<3xf32>) -> ()
  } : (tensor<2xi1>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%c: tensor<i1>, %x: tensor<3xf32>) {
  // expected-error @+1 {{graph.if: else body block arguments (tensor<4xf32>) must be (tensor<3xf32>)}}
  %r = graph.if %c, %x {
  ^bb0(%a: tensor<3xf32>):
    graph.yield %a : (tensor<3xf32>) -> ()
  } {
  ^bb0(%a: tensor<4xf32>):
    %s = graph.slice %a {starts = array<i64: 0>, ends = array<i64: 3>} : (tensor<4xf32>) -> tensor<3xf32>
    graph.yield %s : (tensor<3xf32>) -> ()
  } : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<3xf32>) {
  // expected-error @+1 {{graph.loop: body yields carried values (tensor<6xf32>) but they enter as (tensor<3xf32>)}}
  %r = graph.loop %m, %c, %x attributes {max_iterations = 2 : i64, num_carried = 1 : i64} {
  ^bb0(%i: tensor<i64>, %k: tensor<i1>, %v: tensor<3xf32>):
    %w = graph.concat %v, %v {axis = 0 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
    graph.yield %k, %w : (tensor<i1>, tensor<6xf32>) -> ()
  } : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<3xf32>) {
  // expected-error @+1 {{graph.loop: result types (tensor<3xf32>, tensor<3x3xf32>) do not match the inferred types (tensor<3xf32>, tensor<2x3xf32>)}}
  %r, %s = graph.loop %m, %c, %x attributes {max_iterations = 2 : i64, num_carried = 1 : i64} {
  ^bb0(%i: tensor<i64>, %k: tensor<i1>, %v: tensor<3xf32>):
    graph.yield %k, %v, %v : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> ()
  } : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3x3xf32>)
  func.return
}

// -----

func.func @f(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<3xf32>) {
  // expected-error @+1 {{graph.loop: missing attribute 'max_iterations'}}
  %r = graph.loop %m, %c, %x attributes {num_carried = 1 : i64} {
  ^bb0(%i: tensor<i64>, %k: tensor<i1>, %v: tensor<3xf32>):
    graph.yield %k, %v : (tensor<i1>, tensor<3xf32>) -> ()
  } : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%a: tensor<5x2xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{graph.scan: scan inputs have different lengths [4, 5] along their axes}}
  %r = graph.scan %a, %b attributes {num_carried = 0 : i64, num_scan_inputs = 2 : i64} {
  ^bb0(%x: tensor<2xf32>, %y: tensor<2xf32>):
    graph.yield %x : (tensor<2xf32>) -> ()
  } : (tensor<5x2xf32>, tensor<4x2xf32>) -> tensor<5x2xf32>
  func.return
}

// -----

func.func @f(%a: tensor<5x2xf32>) {
  // expected-error @+1 {{graph.scan: unknown attribute 'axes'}}
  %r = graph.scan %a attributes {num_carried = 0 : i64, num_scan_inputs = 1 : i64, axes = 1 : i64} {
  ^bb0(%x: tensor<2xf32>):
    graph.yield %x : (tensor<2xf32>) -> ()
  } : (tensor<5x2xf32>) -> tensor<5x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<3xf32>) {
  // expected-error @+1 {{'graph.yield' expects parent op to be one of 'graph.if', 'graph.loop', 'graph.scan'}}
  graph.yield %x : (tensor<3xf32>) -> ()
}

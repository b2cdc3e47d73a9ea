// lower-to-loops errors inside control-flow bodies name the op's own line.
// RUN: not dlc-opt %s --split-input-file -p lower-to-loops 2>&1 | filecheck %s
// RUN: not dlc-opt %s --split-input-file -p lower-to-loops 2>&1 | filecheck %s --check-prefix=NOTRACE
// NOTRACE-NOT: Traceback

func.func @composite_in_if(%c: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %r = graph.if %c, %x {
  ^bb0(%a: tensor<3xf32>):
    %n = graph.gelu %a : (tensor<3xf32>) -> tensor<3xf32>
    graph.yield %n : (tensor<3xf32>) -> ()
  } {
  ^bb0(%a: tensor<3xf32>):
    graph.yield %a : (tensor<3xf32>) -> ()
  } : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}
// CHECK: control_flow_errors.mlir:[[# @LINE - 8]]:5: error: pass 'lower-to-loops' failed: 'graph.gelu' is a composite op: run legalize first

// -----

func.func @composite_in_scan(%init: tensor<2xf32>, %xs: tensor<5x2xf32>) -> tensor<2xf32> {
  %s = graph.scan %init, %xs attributes {num_carried = 1 : i64, num_scan_inputs = 1 : i64} {
  ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
    %n = graph.gelu %x : (tensor<2xf32>) -> tensor<2xf32>
    graph.yield %n : (tensor<2xf32>) -> ()
  } : (tensor<2xf32>, tensor<5x2xf32>) -> tensor<2xf32>
  func.return %s : tensor<2xf32>
}
// CHECK: control_flow_errors.mlir:[[# @LINE - 5]]:5: error: pass 'lower-to-loops' failed: 'graph.gelu' is a composite op: run legalize first

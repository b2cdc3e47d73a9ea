// annotate-target: the first target whose predicate accepts an op; a refused op
// (no predicate, or the predicate's reason) stays with dlc with a note; constants
// are never annotated.
// RUN: dlc-opt %s -p 'annotate-target{targets=c}' | filecheck %s
// RUN: dlc-opt %s -p 'annotate-target{targets=c}' | dlc-opt | filecheck %s
// RUN: not dlc-opt %s -p 'annotate-target{targets=c,zzz}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: dlc-opt: error: unknown BYOC target 'zzz' (known: c, dnnl)

// CHECK: graph.constant
// CHECK-NOT: dlc.target_annotation
// CHECK-SAME: {{$}}
// CHECK: graph.add %x, %w {dlc.target_annotation = "c"}
// CHECK: graph.softmax %a {axis = 0 : i64, dlc.byoc_note = "c: no support predicate for graph.softmax"}
// CHECK: graph.relu %d {dlc.byoc_note = "c: element type f64 (the c codegen emits float only)"}
func.func @main(%x: tensor<4xf32>, %d: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>) {
  %w = graph.constant dense<1.0> : tensor<4xf32>
  %a = graph.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = graph.softmax %a {axis = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %r = graph.relu %d : (tensor<4xf64>) -> tensor<4xf64>
  return %s, %r : tensor<4xf32>, tensor<4xf64>
}

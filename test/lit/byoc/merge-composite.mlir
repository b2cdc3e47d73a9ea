// merge-composite{target=c}: relu(add(a, b)) becomes the composite c.add_relu; the round
// trip of its output; an add whose result has another user is not absorbed.
// RUN: dlc-opt %s -p 'merge-composite{target=c}' | filecheck %s
// RUN: dlc-opt %s -p 'merge-composite{target=c}' | dlc-opt | filecheck %s
// RUN: dlc-opt %s -p 'merge-composite{target=c}' | filecheck %s --check-prefix=FN
// RUN: not dlc-opt %s -p 'merge-composite{target=nope}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not dlc-opt %s -p 'merge-composite' 2>&1 | filecheck %s --check-prefix=MISSING
// UNKNOWN: dlc-opt: error: unknown BYOC target 'nope' (known: c, dnnl)
// MISSING: dlc-opt: error: merge-composite needs a target

// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[C:.*]] = func.call @composite_c_add_relu_0(%x, %y)
// CHECK-NEXT: %[[A:.*]] = graph.add %x, %y
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[A]]
// FN: func.func private @composite_c_add_relu_0(%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>) -> tensor<4xf32> attributes {dlc.composite = "c.add_relu"}
// FN-NEXT: graph.add
// FN-NEXT: graph.relu
// FN-NEXT: func.return
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = graph.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = graph.relu %b : (tensor<4xf32>) -> tensor<4xf32>
  return %r, %s, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// The pattern's check refuses f64: nothing is wrapped, the root says why, and the
// whole pipeline leaves both ops with dlc.
// RUN: dlc-opt %s -p 'merge-composite{target=c},annotate-target{targets=c},merge-compiler-regions,partition-graph' | filecheck %s --check-prefix=PIPE
// CHECK-LABEL: func.func @refused
// CHECK-NEXT: graph.add %x, %x : (tensor<4xf64>
// CHECK-NEXT: graph.relu %{{.*}} {dlc.byoc_note = "c.add_relu: element type f64 (the c codegen emits float only)"}
// PIPE: "stays with dlc: graph.add: c: element type f64 (the c codegen emits float only)"
// PIPE: "stays with dlc: graph.relu: c.add_relu: element type f64 (the c codegen emits float only); c: element type f64 (the c codegen emits float only)"
// PIPE-LABEL: func.func @refused
// PIPE-NEXT: graph.add %x, %x : (tensor<4xf64>
// PIPE-NEXT: graph.relu %{{.*}} : (tensor<4xf64>)
func.func @refused(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = graph.add %x, %x : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %r = graph.relu %a : (tensor<4xf64>) -> tensor<4xf64>
  return %r : tensor<4xf64>
}

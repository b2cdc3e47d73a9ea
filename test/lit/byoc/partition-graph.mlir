// The whole BYOC pipeline on dlc-opt: partitions tagged dlc.codegen, constants lifted
// to dlc.constant arguments, composites inlined with their pattern name, the report;
// a composite whose check fails stays with dlc (merge-composite.mlir, @refused).
// RUN: dlc-opt %s -p 'merge-composite{target=c},annotate-target{targets=c},merge-compiler-regions,partition-graph' | filecheck %s
// RUN: dlc-opt %s -p 'merge-composite{target=c},annotate-target{targets=c},merge-compiler-regions,partition-graph' | dlc-opt | filecheck %s
// RUN: dlc-opt %s -p 'merge-composite{target=c},annotate-target{targets=c},merge-compiler-regions,partition-graph,legalize,lower-to-loops' | filecheck %s --check-prefix=LOOPS

// CHECK: dlc.byoc_report = ["partition @c_main_0 -> c: 3 ops (graph.add, graph.relu, graph.mul; composites: c.add_relu)", "stays with dlc: graph.softmax: c: no support predicate for graph.softmax"]
// CHECK: func.func @main
// CHECK-NEXT: %w = graph.constant
// CHECK-NEXT: %m = func.call @c_main_0(%x, %y, %w) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: graph.softmax %m
// CHECK: func.func private @c_main_0(%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<4xf32> {dlc.constant}) -> tensor<2x4xf32> attributes {dlc.codegen = "c"}
// CHECK-NEXT: graph.add {{.*}}{dlc.composite = "c.add_relu", dlc.composite_id = 0 : i64}
// CHECK-NEXT: graph.relu {{.*}}{dlc.composite = "c.add_relu", dlc.composite_id = 0 : i64}
// CHECK-NEXT: graph.mul
// CHECK-NOT: composite_c_add_relu

// LOOPS: func.call @c_main_0(%x, %y, %{{.*}}, %{{.*}}) : (memref<2x4xf32>, memref<2x4xf32>, memref<4xf32>, memref<2x4xf32>) -> ()
// LOOPS: func.func private @c_main_0(memref<2x4xf32>, memref<2x4xf32>, memref<4xf32>, memref<2x4xf32>) -> () attributes {dlc.external = "c"}
func.func @main(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = graph.constant dense<1.5> : tensor<4xf32>
  %a = graph.add %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = graph.relu %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = graph.mul %r, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %s = graph.softmax %m {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}

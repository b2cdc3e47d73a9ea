// fuse-ops marks groups (dlc.group on each member, anchor first); lower-to-loops
// makes each group ONE kernel whose epilogue runs in the producer's output loop.
// RUN: dlc-opt %s -p fuse-ops | filecheck %s
// RUN: dlc-opt %s -p 'fuse-ops{dense=false}' | filecheck %s --check-prefix=NODENSE
// RUN: dlc-opt %s -p fuse-ops,lower-to-loops | filecheck %s --check-prefix=LOOPS
// RUN: not dlc-opt %s -p 'fuse-ops{depth=2}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: dlc-opt: error: pass 'fuse-ops' has no option 'depth' (its options: dense)
// OPTION-NOT: Traceback

func.func @main(%x: tensor<1x3x5x5xf32>, %w: tensor<2x3x3x3xf32>, %b: tensor<2x1x1xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %y = graph.conv2d %x, %w : (tensor<1x3x5x5xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32>
  %a = graph.add %y, %b : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.relu %a : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %e = graph.exp %r : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %n = graph.neg %r : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %e, %n : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
// %r has two users: the group ends there; exp and neg stay alone.
// CHECK:      graph.conv2d %x, %w {dlc.group = 0 : i64}
// CHECK-NEXT: graph.add %{{.*}}, %b {dlc.group = 0 : i64}
// CHECK-NEXT: graph.relu %{{.*}} {dlc.group = 0 : i64}
// CHECK-NEXT: graph.exp %{{[a-z0-9_]+}} :
// CHECK-NEXT: graph.neg %{{[a-z0-9_]+}} :

// NODENSE:      graph.conv2d %x, %w :
// NODENSE-NEXT: graph.add %{{.*}}, %b {dlc.group = 0 : i64}
// NODENSE-NEXT: graph.relu %{{.*}} {dlc.group = 0 : i64}

// LOOPS-LABEL: func.func @main_2_conv2d_add_relu(%x: memref<1x3x5x5xf32>, %w: memref<2x3x3x3xf32>, %extra0: memref<2x1x1xf32>, %out: memref<1x2x3x3xf32>)
// LOOPS-SAME:  tloop.fused = "graph.conv2d+add+relu"
// LOOPS:       tloop.for %kw = 0 to 3 {
// LOOPS:       }
// the epilogue, after the reduction, inside the output loops:
// LOOPS:       %[[ACC:.*]] = memref.load %out[%{{.*}}, %oc, %oh, %ow]
// LOOPS-NEXT:  %[[B:.*]] = memref.load %extra0[%oc, %{{.*}}, %{{.*}}]
// LOOPS-NEXT:  %[[S:.*]] = arith.addf %[[ACC]], %[[B]]
// LOOPS-NEXT:  %[[R:.*]] = arith.maximumf %[[S]], %{{.*}}
// LOOPS-NEXT:  memref.store %[[R]], %out[%{{.*}}, %oc, %oh, %ow]
// LOOPS-LABEL: func.func @main(
// LOOPS:       %[[BUF:.*]] = memref.alloc() : memref<1x2x3x3xf32>
// LOOPS-NEXT:  func.call @main_2_conv2d_add_relu(%x, %w, %b, %[[BUF]])
// LOOPS-NOT:   memref.alloc

// graph.custom: round trip, then lower-to-loops through the TE lowering.
// RUN: dlc-opt %s | filecheck %s --check-prefix=ROUND
// RUN: dlc-opt %s -p lower-to-loops | filecheck %s

func.func @main(%a: tensor<5x3xf32>, %w: tensor<2xf32>) -> tensor<5x2xf32> {
  %y = graph.custom %a, %w {te = "Y[i, j] = max(k: A[i, k]) * W[j]"} : (tensor<5x3xf32>, tensor<2xf32>) -> tensor<5x2xf32>
  func.return %y : tensor<5x2xf32>
}
// ROUND: %y = graph.custom %a, %w {te = "Y[i, j] = max(k: A[i, k]) * W[j]"} : (tensor<5x3xf32>, tensor<2xf32>) -> tensor<5x2xf32>

// CHECK:      func.func @main_0_custom(%A: memref<5x3xf32>, %W: memref<2xf32>, %Y: memref<5x2xf32>) attributes {tloop.kernel, tloop.source = "graph.custom"} {
// CHECK:        %acc1 = memref.alloc() : memref<5x2xf32>
// CHECK:        tloop.for %i = 0 to 5 {
// CHECK-NEXT:     tloop.for %j = 0 to 2 {
// CHECK-NEXT:       memref.store %{{.*}}, %acc1[%i, %j] : memref<5x2xf32>
// CHECK-NEXT:       tloop.for %k = 0 to 3 {
// CHECK:              arith.maximumf
// CHECK:            %[[M:.*]] = memref.load %acc1[%i, %j] : memref<5x2xf32>
// CHECK-NEXT:       %[[W:.*]] = memref.load %W[%j] : memref<2xf32>
// CHECK-NEXT:       %[[P:.*]] = arith.mulf %[[M]], %[[W]] : f32
// CHECK-NEXT:       memref.store %[[P]], %Y[%i, %j] : memref<5x2xf32>
// CHECK:        memref.dealloc %acc1 : memref<5x2xf32>
// CHECK:      func.func @main(
// CHECK:        func.call @main_0_custom(

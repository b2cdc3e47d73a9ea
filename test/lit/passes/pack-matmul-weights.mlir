// pack-matmul-weights: a matmul with a constant [K, N] rhs reads it as [N / R, K, R]
// column panels (graph.matmul_packed); other matmuls stay. The packed values and the
// compiled kernel are checked in test/python/test_pack_matmul_weights.py.
// RUN: dlc-opt %s -p 'pack-matmul-weights{panel=2}' | filecheck %s
// RUN: dlc-opt %s -p 'pack-matmul-weights{panel=2}' | dlc-opt | filecheck %s --check-prefix=REPARSE
// RUN: not dlc-opt %s -p 'pack-matmul-weights{panel=-1}' 2>&1 | filecheck %s --check-prefix=PANEL
// RUN: not dlc-opt %s -p 'pack-matmul-weights{min-rows=0}' 2>&1 | filecheck %s --check-prefix=ROWS
// PANEL: dlc-opt: error: invalid options for pass 'pack-matmul-weights': panel must be >= 0, got -1
// PANEL-NOT: Traceback
// ROWS: dlc-opt: error: invalid options for pass 'pack-matmul-weights': min-rows must be >= 1, got 0
// REPARSE: graph.matmul_packed

// CHECK-LABEL: func.func @packed
// CHECK-NEXT:  %[[W:[a-z0-9_]+]] = graph.weight "const.packed2" : tensor<2x3x2xf32>
// CHECK-NEXT:  %[[Y:[a-z0-9_]+]] = graph.matmul_packed %x, %[[W]] : (tensor<1x4x3xf32>, tensor<2x3x2xf32>) -> tensor<1x4x4xf32>
// CHECK-NEXT:  func.return %[[Y]]
func.func @packed(%x: tensor<1x4x3xf32>) -> tensor<1x4x4xf32> {
  %b = graph.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>
  %y = graph.matmul %x, %b : (tensor<1x4x3xf32>, tensor<3x4xf32>) -> tensor<1x4x4xf32>
  func.return %y : tensor<1x4x4xf32>
}

// one constant read by two matmuls: packed once
// CHECK-LABEL: func.func @shared
// CHECK-NEXT:  %[[W1:[a-z0-9_]+]] = graph.weight "[[NAME:const.packed2[_0-9]*]]" : tensor<1x3x2xf32>
// CHECK-NEXT:  graph.matmul_packed %x, %[[W1]]
// CHECK-NEXT:  %[[W2:[a-z0-9_]+]] = graph.weight "[[NAME]]" : tensor<1x3x2xf32>
// CHECK-NEXT:  graph.matmul_packed %x2, %[[W2]]
func.func @shared(%x: tensor<4x3xf32>, %x2: tensor<5x3xf32>) -> (tensor<4x2xf32>, tensor<5x2xf32>) {
  %b = graph.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %y = graph.matmul %x, %b : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y2 = graph.matmul %x2, %b : (tensor<5x3xf32>, tensor<3x2xf32>) -> tensor<5x2xf32>
  func.return %y, %y2 : tensor<4x2xf32>, tensor<5x2xf32>
}

// a batch of rows: one [B * M, K] product between two reshapes (views); 2 x 2 rows count
// as 4
// CHECK-LABEL: func.func @batched
// CHECK-NEXT:  %[[W:[a-z0-9_]+]] = graph.weight "{{const.packed2[_0-9]*}}" : tensor<2x3x2xf32>
// CHECK-NEXT:  %[[F:[a-z0-9_]+]] = graph.reshape %xb {shape = array<i64: 4, 3>} : (tensor<2x2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:  %[[P:[a-z0-9_]+]] = graph.matmul_packed %[[F]], %[[W]] : (tensor<4x3xf32>, tensor<2x3x2xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:  %[[Y:[a-z0-9_]+]] = graph.reshape %[[P]] {shape = array<i64: 2, 2, 4>} : (tensor<4x4xf32>) -> tensor<2x2x4xf32>
// CHECK-NEXT:  func.return %[[Y]]
func.func @batched(%xb: tensor<2x2x3xf32>) -> tensor<2x2x4xf32> {
  %b = graph.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>
  %y = graph.matmul %xb, %b : (tensor<2x2x3xf32>, tensor<3x4xf32>) -> tensor<2x2x4xf32>
  func.return %y : tensor<2x2x4xf32>
}

// N = 9 with panels of 2: 5 panels, the last zero-padded, the product sliced back to 9
// CHECK-LABEL: func.func @column_tail
// CHECK-NEXT:  %[[W:[a-z0-9_]+]] = graph.weight "{{const.packed2[_0-9]*}}" : tensor<5x3x2xf32>
// CHECK-NEXT:  %[[P:[a-z0-9_]+]] = graph.matmul_packed %x, %[[W]] : (tensor<4x3xf32>, tensor<5x3x2xf32>) -> tensor<4x10xf32>
// CHECK-NEXT:  %[[Y:[a-z0-9_]+]] = graph.slice %[[P]] {starts = array<i64: 0>, ends = array<i64: 9>, axes = array<i64: 1>} : (tensor<4x10xf32>) -> tensor<4x9xf32>
// CHECK-NEXT:  func.return %[[Y]]
func.func @column_tail(%x: tensor<4x3xf32>) -> tensor<4x9xf32> {
  %b = graph.constant dense<2.0> : tensor<3x9xf32>
  %y = graph.matmul %x, %b : (tensor<4x3xf32>, tensor<3x9xf32>) -> tensor<4x9xf32>
  func.return %y : tensor<4x9xf32>
}

// left alone: 3 rows (the matrix-vector schedule reads B as it is), N not a multiple of
// the panel and fewer than 4 panels, a run-time rhs, f16
// CHECK-LABEL: func.func @stay
// CHECK-NOT:   graph.matmul_packed
// CHECK-COUNT-4: graph.matmul %
// CHECK-NOT:   graph.matmul_packed
func.func @stay(%x3: tensor<3x3xf32>, %x: tensor<4x3xf32>, %b_in: tensor<3x4xf32>, %xh: tensor<4x3xf16>) -> (tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x4xf32>, tensor<4x2xf16>) {
  %b = graph.constant dense<1.0> : tensor<3x4xf32>
  %b3 = graph.constant dense<1.0> : tensor<3x3xf32>
  %bh = graph.constant dense<1.0> : tensor<3x2xf16>
  %0 = graph.matmul %x3, %b : (tensor<3x3xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = graph.matmul %x, %b3 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %2 = graph.matmul %x, %b_in : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  %4 = graph.matmul %xh, %bh : (tensor<4x3xf16>, tensor<3x2xf16>) -> tensor<4x2xf16>
  func.return %0, %1, %2, %4 : tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x4xf32>, tensor<4x2xf16>
}

// Host functions of lower-to-loops: destination passing, copies of results
// that are inputs / constants / duplicates, weights, buffer reuse, shared kernels.
// RUN: dlc-opt %s --split-input-file -p lower-to-loops | filecheck %s
// RUN: dlc-opt %s --split-input-file -p 'lower-to-loops{reuse-buffers=false}' | filecheck %s --check-prefix=NOREUSE

func.func @passthrough(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>) {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = graph.neg %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %x, %c, %y, %y : tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @passthrough_1_neg(%in0: memref<3xf32>, %out: memref<3xf32>) attributes {tloop.kernel, tloop.source = "graph.neg"}
// CHECK:         arith.negf
// CHECK-LABEL: func.func @passthrough_copy(%x: memref<3xf32>, %out: memref<3xf32>) attributes {tloop.kernel, tloop.source = "copy"}
// CHECK-LABEL: func.func @passthrough_copy_1(%x: memref<2xf32>, %out: memref<2xf32>)
// CHECK-LABEL: func.func @passthrough(%x: memref<3xf32>, %result0: memref<3xf32>, %result1: memref<2xf32>, %result2: memref<3xf32>, %result3: memref<3xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64}
// CHECK-NEXT:    %[[C:.*]] = tloop.weight "passthrough.const0" : memref<2xf32>
// CHECK-NEXT:    func.call @passthrough_1_neg(%x, %result2)
// CHECK-NEXT:    func.call @passthrough_copy(%x, %result0)
// CHECK-NEXT:    func.call @passthrough_copy_1(%[[C]], %result1)
// CHECK-NEXT:    func.call @passthrough_copy(%result2, %result3)
// CHECK-NEXT:    func.return

// -----

// %b is read by two ops; buffers are reused once their value is dead.
func.func @chain(%a: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %b = graph.exp %a : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %c = graph.exp %b : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %d = graph.add %b, %c : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %e = graph.exp %d : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %f = graph.exp %e : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %f : tensor<4x5xf32>
}

// CHECK-LABEL: func.func @chain_0_exp(
// CHECK-NOT:   func.func @chain_1_exp
// CHECK-LABEL: func.func @chain_2_add(
// CHECK-LABEL: func.func @chain(%a: memref<4x5xf32>, %result0: memref<4x5xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64}
// CHECK-NEXT:    %buf0 = memref.alloc() : memref<4x5xf32>
// CHECK-NEXT:    func.call @chain_0_exp(%a, %buf0)
// CHECK-NEXT:    %buf1 = memref.alloc() : memref<4x5xf32>
// CHECK-NEXT:    func.call @chain_0_exp(%buf0, %buf1)
// CHECK-NEXT:    %buf2 = memref.alloc() : memref<4x5xf32>
// CHECK-NEXT:    func.call @chain_2_add(%buf0, %buf1, %buf2)
// CHECK-NEXT:    memref.dealloc %buf0
// CHECK-NEXT:    func.call @chain_0_exp(%buf2, %buf1)
// CHECK-NEXT:    memref.dealloc %buf2
// CHECK-NEXT:    func.call @chain_0_exp(%buf1, %result0)
// CHECK-NEXT:    memref.dealloc %buf1
// CHECK-NEXT:    func.return

// Without reuse every intermediate gets its own buffer.
// NOREUSE-LABEL: func.func @chain(
// NOREUSE-COUNT-4: memref.alloc()
// NOREUSE-NOT:     memref.alloc()
// NOREUSE:         func.return

// -----

// Weights by name; unused split results still get (short-lived) buffers.
func.func @weights(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.weight "fc.weight" : tensor<4x3xf32>
  %y = graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %s:2 = graph.split %y {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @weights(%x: memref<2x4xf32>, %result0: memref<2x3xf32>)
// CHECK-NEXT:    %[[W:.*]] = tloop.weight "fc.weight" : memref<4x3xf32>
// CHECK-NEXT:    func.call @weights_1_matmul(%x, %[[W]], %result0)
// CHECK-NEXT:    %[[S0:.*]] = memref.alloc() : memref<2x1xf32>
// CHECK-NEXT:    %[[S1:.*]] = memref.alloc() : memref<2x2xf32>
// CHECK-NEXT:    func.call @weights_2_split(%result0, %[[S0]], %[[S1]])
// CHECK-NEXT:    memref.dealloc %[[S0]]
// CHECK-NEXT:    memref.dealloc %[[S1]]
// CHECK-NEXT:    func.return

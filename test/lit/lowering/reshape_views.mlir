// Reshapes of buffers are views: a memref.reinterpret_cast of the operand's
// buffer, no kernel call, no buffer of their own; lower-to-llvm makes the view
// the same pointer. A reshape into a function result makes its operand be
// computed into that result, or (of an input) stays a copy kernel.
// RUN: dlc-opt %s --split-input-file -p lower-to-loops | filecheck %s
// RUN: dlc-opt %s --split-input-file -p lower-to-loops,lower-to-llvm | filecheck %s --check-prefix=LLVM

func.func @chain(%x: tensor<2x3x5xf32>) -> tensor<5x6xf32> {
  %r = graph.reshape %x {shape = array<i64: 6, 5>} : (tensor<2x3x5xf32>) -> tensor<6x5xf32>
  %e = graph.exp %r : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %f = graph.reshape %e {shape = array<i64: 5, 6>} : (tensor<6x5xf32>) -> tensor<5x6xf32>
  %n = graph.neg %f : (tensor<5x6xf32>) -> tensor<5x6xf32>
  func.return %n : tensor<5x6xf32>
}

// CHECK-NOT:   tloop.source = "graph.reshape"
// CHECK-LABEL: func.func @chain(%x: memref<2x3x5xf32>, %result0: memref<5x6xf32>) attributes {tloop.host
// CHECK-NEXT:    %[[IN:.*]] = memref.reinterpret_cast %x to offset: [0], sizes: [6, 5], strides: [5, 1] : memref<2x3x5xf32> to memref<6x5xf32>
// CHECK-NEXT:    %[[BUF:.*]] = memref.alloc() : memref<6x5xf32>
// CHECK-NEXT:    func.call @chain_1_exp(%[[IN]], %[[BUF]])
// CHECK-NEXT:    %[[V:.*]] = memref.reinterpret_cast %[[BUF]] to offset: [0], sizes: [5, 6], strides: [6, 1] : memref<6x5xf32> to memref<5x6xf32>
// CHECK-NEXT:    func.call @chain_3_neg(%[[V]], %result0)
// CHECK-NEXT:    memref.dealloc %[[BUF]] : memref<6x5xf32>
// CHECK-NEXT:    func.return

// The view is the pointer itself.
// LLVM-LABEL: llvm.func @chain(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// LLVM:         %[[A:.*]] = llvm.call @aligned_alloc
// LLVM:         llvm.call @chain_1_exp(%{{.*}}, %[[A]])
// LLVM-NEXT:    llvm.call @chain_3_neg(%[[A]], %{{.*}})
// LLVM-NEXT:    llvm.call @free(%[[A]])

// -----

func.func @result(%x: tensor<3x7xf32>) -> (tensor<21xf32>, tensor<7x3xf32>) {
  %e = graph.exp %x : (tensor<3x7xf32>) -> tensor<3x7xf32>
  %r = graph.reshape %e {shape = array<i64: 21>} : (tensor<3x7xf32>) -> tensor<21xf32>
  %q = graph.reshape %x {shape = array<i64: 7, 3>} : (tensor<3x7xf32>) -> tensor<7x3xf32>
  func.return %r, %q : tensor<21xf32>, tensor<7x3xf32>
}

// A reshape into a function result: exp computes straight into the result
// (viewed as 3x7); the reshape of an input copies it with the reshape kernel.
// CHECK-LABEL: func.func @result_2_reshape(
// CHECK-SAME:    tloop.source = "graph.reshape"
// CHECK-LABEL: func.func @result(%x: memref<3x7xf32>, %result0: memref<21xf32>, %result1: memref<7x3xf32>)
// CHECK-NEXT:    %[[V:.*]] = memref.reinterpret_cast %result0 to offset: [0], sizes: [3, 7], strides: [7, 1] : memref<21xf32> to memref<3x7xf32>
// CHECK-NEXT:    func.call @result_0_exp(%x, %[[V]])
// CHECK-NEXT:    func.call @result_2_reshape(%x, %result1)
// CHECK-NEXT:    func.return

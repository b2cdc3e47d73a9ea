// lower-to-llvm lowers a memref.reinterpret_cast (a reshape view) to the same
// pointer only when its offset/strides are those of its static result type.
// RUN: not dlc-opt %s --split-input-file -p lower-to-llvm 2>&1 | filecheck %s
// RUN: not dlc-opt %s --split-input-file -p lower-to-llvm 2>&1 | filecheck %s --check-prefix=NOTRACE
// NOTRACE-NOT: Traceback

func.func @k(%x: memref<6xf32>) attributes {tloop.kernel, tloop.source = "graph.exp"} {
  func.return
}
func.func @offset(%x: memref<2x3xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
  %v = memref.reinterpret_cast %x to offset: [2], sizes: [6], strides: [1] : memref<2x3xf32> to memref<6xf32>
  func.call @k(%v) : (memref<6xf32>) -> ()
  func.return
}
// CHECK: reshape-view-errors.mlir:[[# @LINE - 4]]:3: error: pass 'lower-to-llvm' failed: 'memref.reinterpret_cast' offset/strides differ from its result type's (0, [1]) (in @offset)

// -----

func.func @k(%x: memref<3x2xf32>) attributes {tloop.kernel, tloop.source = "graph.exp"} {
  func.return
}
func.func @strides(%x: memref<2x3xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
  %v = memref.reinterpret_cast %x to offset: [0], sizes: [3, 2], strides: [1, 3] : memref<2x3xf32> to memref<3x2xf32>
  func.call @k(%v) : (memref<3x2xf32>) -> ()
  func.return
}
// CHECK: reshape-view-errors.mlir:[[# @LINE - 4]]:3: error: pass 'lower-to-llvm' failed: 'memref.reinterpret_cast' offset/strides differ from its result type's (0, [2, 1]) (in @strides)

// -----

func.func @k(%x: memref<6xf32>) attributes {tloop.kernel, tloop.source = "graph.exp"} {
  func.return
}
func.func @dynamic(%x: memref<2x3xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
  %o = arith.constant 0 : index
  %v = memref.reinterpret_cast %x to offset: [%o], sizes: [6], strides: [1] : memref<2x3xf32> to memref<6xf32>
  func.call @k(%v) : (memref<6xf32>) -> ()
  func.return
}
// CHECK: reshape-view-errors.mlir:[[# @LINE - 4]]:3: error: pass 'lower-to-llvm' failed: 'memref.reinterpret_cast' with dynamic offsets/sizes is not supported (in @dynamic)

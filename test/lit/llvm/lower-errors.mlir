// What lower-to-llvm cannot lower is one error line naming the op (or type) and
// its function, at the op's location; no traceback.
// RUN: not dlc-opt %s --split-input-file -p lower-to-llvm 2>&1 | filecheck %s
// RUN: dlc-opt %s --split-input-file -p lower-to-llvm --verify-diagnostics
// CHECK-NOT: Traceback

builtin.module {
  func.func @k(%x: memref<4xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 4 {
      %v = memref.load %x[%i] : memref<4xf32>
      %n = arith.constant 3 : i32
      // expected-error @+1 {{pass 'lower-to-llvm' failed: 'math.fpowi' is not supported by the LLVM backend (in @k)}}
      %r = math.fpowi %v, %n : f32, i32
      memref.store %r, %x[%i] : memref<4xf32>
    }
    func.return
  }
}
// CHECK: lower-errors.mlir:[[# @LINE - 6]]:{{[0-9]+}}: error: pass 'lower-to-llvm' failed: 'math.fpowi' is not supported by the LLVM backend (in @k)

// -----

builtin.module {
  // expected-error @+1 {{pass 'lower-to-llvm' failed: dynamic memref memref<?xf32> is not supported}}
  func.func @dyn(%x: memref<?xf32>) attributes {tloop.kernel} {
    func.return
  }
}
// CHECK: error: pass 'lower-to-llvm' failed: dynamic memref memref<?xf32> is not supported

// -----

builtin.module {
  func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    // expected-error @+1 {{pass 'lower-to-llvm' failed: 'graph.relu' is a graph-level op; run lower-to-loops first}}
    %r = graph.relu %x : (tensor<3xf32>) -> tensor<3xf32>
    func.return %r : tensor<3xf32>
  }
}
// CHECK: error: pass 'lower-to-llvm' failed: 'graph.relu' is a graph-level op; run lower-to-loops first

// -----

builtin.module {
  func.func @k(%x: memref<4xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 4 {
      %v = memref.load %x[%i] : memref<4xf32>
      // expected-error @+1 {{pass 'lower-to-llvm' failed: 'arith.truncf': type bf16 is not supported (in @k)}}
      %b = arith.truncf %v : f32 to bf16
    }
    func.return
  }
}
// CHECK: error: pass 'lower-to-llvm' failed: 'arith.truncf': type bf16 is not supported (in @k)

// Constant loop bounds are checked against buffer extents (tloop.for's
// verifier, dialects/tloop_bounds.py): an access whose index is an affine
// function of the enclosing loops' induction variables, and that runs on
// every iteration, must stay inside every static dimension. The error is at
// the access and names the index range, the buffer, the dim and its extent.
// RUN: not dlc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics
// lower-to-llvm checks the same (for IR built in Python, never verified):
// RUN: not dlc compile %s -o %t.so 2>&1 | filecheck %s --check-prefix=COMPILE
// RUN: not ls %t.so
// CHECK-NOT: Traceback

// The issue's kernel: 0 to 3000000 over a memref<2x3xf32>.
func.func @k(%arg0: memref<2x3xf32>, %out: memref<2x3xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 3000000 {
    tloop.for %j = 0 to 3 {
      // expected-error @+1 {{memref.load index 0 ranges over [0, 2999999] but dim 0 of %arg0 (memref<2x3xf32>) has extent 2}}
      %v = memref.load %arg0[%i, %j] : memref<2x3xf32>
// CHECK: bounds-errors.mlir:[[# @LINE - 1]]:7: error: memref.load index 0 ranges over [0, 2999999] but dim 0 of %arg0 (memref<2x3xf32>) has extent 2
// CHECK-NEXT: {{^}}      %v = memref.load %arg0[%i, %j] : memref<2x3xf32>
// CHECK-NEXT: {{^}}      ^^^^^^^^^^^^^^^^
// COMPILE: bounds-errors.mlir:[[# @LINE - 4]]:7: error: memref.load index 0 ranges over [0, 2999999] but dim 0 of %arg0 (memref<2x3xf32>) has extent 2
      memref.store %v, %out[%j, %j] : memref<2x3xf32>
    }
  }
  func.return
}

// -----

// An affine index: 2 * i + j + 1 with i in [0, 3] and j in [0, 1] reaches 8.
func.func @affine(%x: memref<8xf32>) attributes {tloop.kernel} {
  %zero = arith.constant 0.0 : f32
  tloop.for %i = 0 to 4 {
    tloop.for %j = 0 to 2 {
      %two = arith.constant 2 : index
      %one = arith.constant 1 : index
      %a = arith.muli %two, %i : index
      %b = arith.addi %a, %j : index
      %c = arith.addi %b, %one : index
      // expected-error @+1 {{memref.store index 0 ranges over [1, 8] but dim 0 of %x (memref<8xf32>) has extent 8}}
      memref.store %zero, %x[%c] : memref<8xf32>
// CHECK: bounds-errors.mlir:[[# @LINE - 1]]:7: error: memref.store index 0 ranges over [1, 8] but dim 0 of %x (memref<8xf32>) has extent 8
    }
  }
  func.return
}

// -----

// A negative index, a step and a non-zero start; a constant index.
func.func @negative(%x: memref<4x4xf32>) attributes {tloop.kernel} {
  tloop.for %i = 1 to 4 step 2 {
    %three = arith.constant 3 : index
    %m = arith.subi %i, %three : index
    // expected-error @+1 {{memref.load index 1 ranges over [-2, 0] but dim 1 of %x (memref<4x4xf32>) has extent 4}}
    %v = memref.load %x[%i, %m] : memref<4x4xf32>
// CHECK: error: memref.load index 1 ranges over [-2, 0] but dim 1 of %x (memref<4x4xf32>) has extent 4
  }
  func.return
}

// -----

func.func @constant(%x: memref<4xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 4 {
    %c = arith.constant 4 : index
    // expected-error @+1 {{memref.load index 0 is 4 but dim 0 of %x (memref<4xf32>) has extent 4}}
    %v = memref.load %x[%c] : memref<4xf32>
// CHECK: error: memref.load index 0 is 4 but dim 0 of %x (memref<4xf32>) has extent 4
    memref.store %v, %x[%i] : memref<4xf32>
  }
  func.return
}

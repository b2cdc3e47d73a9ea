// What the loop-bounds check (dialects/tloop_bounds.py) does not flag: it
// flags only accesses that are certainly out of bounds.
// RUN: dlc-opt %s | filecheck %s
// CHECK-LABEL: func.func @in_bounds
// CHECK-LABEL: func.func @guarded
// CHECK-LABEL: func.func @dead
// CHECK-LABEL: func.func @unknown

// Exactly in bounds: i - i + 3 is 3 (an affine form, not an interval sum).
func.func @in_bounds(%x: memref<4x3xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 4 {
    tloop.for %j = 0 to 3 {
      %three = arith.constant 3 : index
      %a = arith.subi %i, %i : index
      %b = arith.addi %a, %three : index
      %v = memref.load %x[%b, %j] : memref<4x3xf32>
      memref.store %v, %x[%i, %j] : memref<4x3xf32>
    }
  }
  func.return
}

// A partial tile after a non-dividing split: the guard keeps the access in bounds.
func.func @guarded(%x: memref<10xf32>) attributes {tloop.kernel} {
  %zero = arith.constant 0.0 : f32
  tloop.for %o = 0 to 3 {
    tloop.for %n = 0 to 4 {
      %four = arith.constant 4 : index
      %ten = arith.constant 10 : index
      %a = arith.muli %o, %four : index
      %i = arith.addi %a, %n : index
      %ok = arith.cmpi ult, %i, %ten : index
      scf.if %ok {
        memref.store %zero, %x[%i] : memref<10xf32>
      }
    }
  }
  func.return
}

// A loop of zero trips never runs its body.
func.func @dead(%x: memref<2xf32>) attributes {tloop.kernel} {
  %zero = arith.constant 0.0 : f32
  tloop.for %i = 5 to 5 {
    memref.store %zero, %x[%i] : memref<2xf32>
  }
  func.return
}

// An index that is not affine in the loops (a division, an argument) is not checked.
func.func @unknown(%x: memref<4xf32>, %n: index) attributes {tloop.kernel} {
  %zero = arith.constant 0.0 : f32
  tloop.for %i = 0 to 16 {
    %four = arith.constant 4 : index
    %q = arith.divui %i, %four : index
    memref.store %zero, %x[%q] : memref<4xf32>
    memref.store %zero, %x[%n] : memref<4xf32>
  }
  func.return
}

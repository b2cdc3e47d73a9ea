// plan-workspace leaves alone what it cannot place: a kernel nobody calls keeps its
// scratch (its signature is someone else's ABI), an allocation inside a region (an
// scf.if branch) stays a heap allocation, a function without allocations gets no
// workspace. None of this is an error.
// RUN: dlc-opt %s -p plan-workspace | filecheck %s

builtin.module {
  func.func @lonely(%x: memref<4xf32>) attributes {tloop.kernel} {
    %tmp = memref.alloc() : memref<4xf32>
    memref.dealloc %tmp : memref<4xf32>
    func.return
  }
  func.func @branchy(%c: memref<i1>, %out: memref<4xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %cond = memref.load %c[] : memref<i1>
    scf.if %cond {
      %t = memref.alloc() : memref<4xf32>
      memref.dealloc %t : memref<4xf32>
    }
    func.return
  }
}

// CHECK-LABEL: func.func @lonely(%x: memref<4xf32>)
// CHECK-NEXT:    %tmp = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    memref.dealloc %tmp : memref<4xf32>
// CHECK-LABEL: func.func @branchy(
// CHECK-NOT:     dlc.workspace
// CHECK:         %t = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    memref.dealloc %t : memref<4xf32>
// CHECK-NOT:     dlc.workspace

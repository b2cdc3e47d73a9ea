// lower-to-llvm{bare-metal=true}: a buffer outside the workspace plan would need the heap,
// which a bare-metal target has not: one line naming it and its function, no traceback.
// RUN: not dlc-opt %s -p 'lower-to-llvm{bare-metal=true}' 2>&1 | filecheck %s

builtin.module {
  func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %tmp = memref.alloc() : memref<4xf32>
    memref.dealloc %tmp : memref<4xf32>
    func.return
  }
}

// CHECK: error: pass 'lower-to-llvm' failed: 'memref.alloc': the buffer '%tmp' (memref<4xf32>) would need the heap, which a bare-metal target has not: every buffer must be in the workspace plan (plan-workspace plans only top-level buffers of a host function) (in @main)
// CHECK-NOT: Traceback

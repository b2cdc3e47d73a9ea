// lower-to-llvm{bare-metal=true} (a target with no OS: backends/llvm/bare_metal.py): the
// host function takes the workspace as a trailing pointer and the planned dlc.workspace
// alloc is that pointer (its dealloc nothing); a parallel loop is a plain loop; no
// thread-count, workspace-cache or allocation-failure globals, no aligned_alloc/free/GOMP.
// (lower-bare-metal-errors.mlir: a buffer outside the plan.)
// RUN: dlc-opt %s -p 'lower-to-llvm{bare-metal=true}' | filecheck %s

builtin.module {
  func.func @main_0_scale(%x: memref<6x5xf32>, %y: memref<6x5xf32>) attributes {tloop.kernel} {
    %two = arith.constant 2.0 : f32
    tloop.for %i = 0 to 6 parallel {
      tloop.for %j = 0 to 5 {
        %v = memref.load %x[%i, %j] : memref<6x5xf32>
        %s = arith.mulf %v, %two : f32
        memref.store %s, %y[%i, %j] : memref<6x5xf32>
      }
    }
    func.return
  }
  func.func @main(%x: memref<6x5xf32>, %out: memref<6x5xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %arena = memref.alloc() {dlc.workspace} : memref<128xi8>
    %off = arith.constant 0 : index
    %t = memref.view %arena[%off][] : memref<128xi8> to memref<6x5xf32>
    func.call @main_0_scale(%x, %t) : (memref<6x5xf32>, memref<6x5xf32>) -> ()
    func.call @main_0_scale(%t, %out) : (memref<6x5xf32>, memref<6x5xf32>) -> ()
    memref.dealloc %arena {dlc.workspace} : memref<128xi8>
    func.return
  }
}

// CHECK-NOT:   GOMP
// CHECK-NOT:   dlc_num_threads
// CHECK:       llvm.func @main(%[[X:[0-9]+]]: !llvm.ptr, %[[OUT:[0-9]+]]: !llvm.ptr, %[[WS:[0-9]+]]: !llvm.ptr) -> i32 attributes {tloop.host, tloop.num_inputs = 1 : i64}
// CHECK-NEXT:    %[[OFF:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[DONE:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[T:.*]] = llvm.getelementptr inbounds %[[WS]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.call @main_0_scale(%[[X]], %[[T]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @main_0_scale(%[[T]], %[[OUT]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return %[[DONE]] : i32
// CHECK-NOT:   aligned_alloc
// CHECK-NOT:   @free
// CHECK-NOT:   dlc_alloc_failure
// CHECK-NOT:   dlc_release_workspaces
// CHECK-NOT:   _workspace


// plan-workspace: kernel heap scratch becomes a caller-allocated argument; the host's
// top-level buffers share one workspace (buffers live at the same time never overlap,
// dead ones are reused; offsets 64-byte aligned); lower-to-llvm takes that workspace
// from a per-function cache (dlc_workspace_acquire/release), not from malloc.
// RUN: dlc-opt %s -p plan-workspace | filecheck %s
// RUN: dlc-opt %s -p plan-workspace,lower-to-llvm | filecheck %s --check-prefix=LLVM

builtin.module {
  func.func @main_0_scale(%x: memref<4xf32>, %y: memref<4xf32>) attributes {tloop.kernel} {
    %tmp = memref.alloc() : memref<4xf32>
    tloop.for %i = 0 to 4 {
      %v = memref.load %x[%i] : memref<4xf32>
      %d = arith.addf %v, %v : f32
      memref.store %d, %tmp[%i] : memref<4xf32>
    }
    tloop.for %i = 0 to 4 {
      %v = memref.load %tmp[%i] : memref<4xf32>
      memref.store %v, %y[%i] : memref<4xf32>
    }
    memref.dealloc %tmp : memref<4xf32>
    func.return
  }
  func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %a = memref.alloc() : memref<4xf32>
    func.call @main_0_scale(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
    %b = memref.alloc() : memref<100xf32>
    %bv = memref.reinterpret_cast %b to offset: [0], sizes: [4], strides: [1] : memref<100xf32> to memref<4xf32>
    func.call @main_0_scale(%a, %bv) : (memref<4xf32>, memref<4xf32>) -> ()
    memref.dealloc %a : memref<4xf32>
    %c = memref.alloc() : memref<4xf32>
    func.call @main_0_scale(%bv, %c) : (memref<4xf32>, memref<4xf32>) -> ()
    memref.dealloc %b : memref<100xf32>
    func.call @main_0_scale(%c, %out) : (memref<4xf32>, memref<4xf32>) -> ()
    memref.dealloc %c : memref<4xf32>
    func.return
  }
}

// CHECK-LABEL: func.func @main_0_scale(%x: memref<4xf32>, %y: memref<4xf32>, %tmp: memref<4xf32>)
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc
// CHECK:         func.return
// b (400 B) is the largest: offset 0; a (live across b's definition) above it at 448;
// the first call's scratch at 0 (b is not defined yet); c reuses a's bytes (a is dead)
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[WS:.*]] = memref.alloc() {dlc.workspace} : memref<576xi8>
// CHECK-NEXT:    %[[O1:.*]] = arith.constant 448 : index
// CHECK-NEXT:    %a = memref.view %[[WS]][%[[O1]]][] : memref<576xi8> to memref<4xf32>
// CHECK-NEXT:    %[[O2:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[S1:.*]] = memref.view %[[WS]][%[[O2]]][] : memref<576xi8> to memref<4xf32>
// CHECK-NEXT:    func.call @main_0_scale(%x, %a, %[[S1]])
// CHECK-NEXT:    %[[O3:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %b = memref.view %[[WS]][%[[O3]]][] : memref<576xi8> to memref<100xf32>
// CHECK:         %[[O5:.*]] = arith.constant 512 : index
// CHECK:         %[[O7:.*]] = arith.constant 448 : index
// CHECK-NEXT:    %c = memref.view %[[WS]][%[[O7]]][] : memref<576xi8> to memref<4xf32>
// CHECK-NOT:     memref.alloc()
// CHECK-NOT:     memref.dealloc %a
// CHECK:         memref.dealloc %[[WS]] {dlc.workspace} : memref<576xi8>
// CHECK-NEXT:    func.return

// LLVM-LABEL: llvm.func @main(
// LLVM:         %[[OK:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM:         %[[SLOT:.*]] = llvm.mlir.addressof @main_workspace : !llvm.ptr
// LLVM:         %[[WS:.*]] = llvm.call @dlc_workspace_acquire(%[[SLOT]], %{{.*}}) : (!llvm.ptr, i64) -> !llvm.ptr
// LLVM-NOT:     @aligned_alloc
// LLVM:         llvm.call @dlc_workspace_release(%{{.*}}, %[[WS]]) : (!llvm.ptr, !llvm.ptr) -> ()
// LLVM-NEXT:    llvm.return %[[OK]] : i32
// LLVM-DAG:   llvm.mlir.global internal @main_workspace(0 : i64)
// LLVM-DAG:   llvm.func internal @dlc_workspace_acquire(
// LLVM-DAG:   llvm.call @GOMP_critical_start()
// LLVM-DAG:   llvm.func @dlc_release_workspaces()

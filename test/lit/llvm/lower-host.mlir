// lower-to-llvm on a host function: weights become external globals tagged with
// their store name, memref.alloc/dealloc become aligned_alloc/free (size rounded
// up to 64 bytes), memref.view a byte GEP into the arena, func.call llvm.call.
// RUN: dlc-opt %s --split-input-file -p lower-to-llvm | filecheck %s

builtin.module {
  func.func @main_0_copy(%x: memref<2x3xf32>, %y: memref<2x3xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 2 {
      tloop.for %j = 0 to 3 {
        %v = memref.load %x[%i, %j] : memref<2x3xf32>
        memref.store %v, %y[%i, %j] : memref<2x3xf32>
      }
    }
    func.return
  }
  func.func @main(%x: memref<2x3xf32>, %out: memref<2x3xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %w = tloop.weight "fc.weight" : memref<2x3xf32>
    %arena = memref.alloc() : memref<100xi8>
    %off = arith.constant 32 : index
    %t = memref.view %arena[%off][] : memref<100xi8> to memref<2x3xf32>
    func.call @main_0_copy(%w, %t) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
    func.call @main_0_copy(%t, %out) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
    memref.dealloc %arena : memref<100xi8>
    func.return
  }
}

// Entry points return an i32 status; a failed allocation records its size and
// returns 2 (runtime/native.py's STATUS_BUFFER_OOM).
// CHECK:       llvm.func @main(%{{[0-9]+}}: !llvm.ptr, %[[OUT:[0-9]+]]: !llvm.ptr) -> i32 attributes {tloop.host, tloop.num_inputs = 1 : i64}
// Constants first, one per value (the 128-byte size is also the failure record's byte count).
// CHECK-NEXT:    %[[ALIGN:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[SIZE:.*]] = llvm.mlir.constant(128) : i64
// CHECK-NEXT:    %[[NULL:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[STATUS:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:    %[[OFF:.*]] = llvm.mlir.constant(32) : i64
// CHECK-NEXT:    %[[DONE:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[W:.*]] = llvm.mlir.addressof @__dlc_weight_0 : !llvm.ptr
// CHECK-NEXT:    %[[ARENA:.*]] = llvm.call @aligned_alloc(%[[ALIGN]], %[[SIZE]]) : (i64, i64) -> !llvm.ptr
// CHECK-NEXT:    %[[ADDR:.*]] = llvm.ptrtoint %[[ARENA]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[FAILED:.*]] = llvm.icmp "eq" %[[ADDR]], %[[NULL]] : i64
// CHECK-NEXT:    llvm.cond_br %[[FAILED]], ^[[FAIL:bb[0-9]+]], ^[[OK:bb[0-9]+]]
// CHECK-NEXT:  ^[[FAIL]]:
// CHECK-NEXT:    %[[RECORD:.*]] = llvm.mlir.addressof @dlc_alloc_failure : !llvm.ptr
// CHECK-NEXT:    llvm.store %[[SIZE]], %[[RECORD]] : i64, !llvm.ptr
// CHECK-NEXT:    llvm.return %[[STATUS]] : i32
// CHECK-NEXT:  ^[[OK]]:
// CHECK-NEXT:    %[[T:.*]] = llvm.getelementptr inbounds %[[ARENA]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.call @main_0_copy(%[[W]], %[[T]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @main_0_copy(%[[T]], %[[OUT]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @free(%[[ARENA]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return %[[DONE]] : i32
// CHECK-DAG:   llvm.mlir.global external @__dlc_weight_0() {addr_space = 0 : i32, dlc.weight_name = "fc.weight"} : !llvm.array<6 x f32>
// CHECK-DAG:   llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK-DAG:   llvm.func @free(!llvm.ptr)

// -----
// An in-place call (the output overlaps an input) drops noalias from that
// kernel; reading one buffer twice does not.
// RUN: dlc-opt %s --split-input-file -p lower-to-llvm | filecheck %s --check-prefix=ALIAS

builtin.module {
  func.func @k_0_relu(%x: memref<4xf32>, %y: memref<4xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 4 {
      %v = memref.load %x[%i] : memref<4xf32>
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %v, %z : f32
      memref.store %r, %y[%i] : memref<4xf32>
    }
    func.return
  }
  func.func @k_1_add(%a: memref<4xf32>, %b: memref<4xf32>, %y: memref<4xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 4 {
      %u = memref.load %a[%i] : memref<4xf32>
      %v = memref.load %b[%i] : memref<4xf32>
      %s = arith.addf %u, %v : f32
      memref.store %s, %y[%i] : memref<4xf32>
    }
    func.return
  }
  func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %arena = memref.alloc() : memref<64xi8>
    %c0 = arith.constant 0 : index
    %t = memref.view %arena[%c0][] : memref<64xi8> to memref<4xf32>
    %u = memref.view %arena[%c0][] : memref<64xi8> to memref<4xf32>
    func.call @k_1_add(%x, %x, %t) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    func.call @k_0_relu(%t, %u) : (memref<4xf32>, memref<4xf32>) -> ()
    func.call @k_0_relu(%u, %out) : (memref<4xf32>, memref<4xf32>) -> ()
    memref.dealloc %arena : memref<64xi8>
    func.return
  }
}
// ALIAS: llvm.func @k_0_relu(%{{[0-9]+}}: !llvm.ptr, %{{[0-9]+}}: !llvm.ptr)
// ALIAS: llvm.func @k_1_add(%{{[0-9]+}}: !llvm.ptr {llvm.noalias}, %{{[0-9]+}}: !llvm.ptr {llvm.noalias}, %{{[0-9]+}}: !llvm.ptr {llvm.noalias})

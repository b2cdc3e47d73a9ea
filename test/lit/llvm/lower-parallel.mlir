// A parallel loop is outlined into @<kernel>_par<N>(ptr): live-ins travel in a
// struct (constants are re-created inside instead: LLVM keeps seeing them as
// constants), the caller runs it with GOMP_parallel and the @dlc_num_threads count;
// each thread computes its chunk from omp_get_thread_num/omp_get_num_threads.
// A parallel loop nested in an outlined one runs serially.
// RUN: dlc-opt %s -p lower-to-llvm | filecheck %s

builtin.module {
  func.func @k_0_scale(%x: memref<6x5xf32>, %y: memref<6x5xf32>) attributes {tloop.kernel} {
    %two = arith.constant 2.0 : f32
    tloop.for %i = 1 to 6 step 2 parallel {
      tloop.for %j = 0 to 5 parallel {
        %v = memref.load %x[%i, %j] : memref<6x5xf32>
        %s = arith.mulf %v, %two : f32
        memref.store %s, %y[%i, %j] : memref<6x5xf32>
      }
    }
    func.return
  }
}

// CHECK:       llvm.func @k_0_scale(%[[X:[0-9]+]]: !llvm.ptr {llvm.noalias}, %[[Y:[0-9]+]]: !llvm.ptr {llvm.noalias})
// CHECK-DAG:     %[[CTX:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(!llvm.ptr, !llvm.ptr)>
// CHECK-DAG:     %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG:     %[[FLAGS:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK:         llvm.getelementptr inbounds %[[CTX]][0, 0]
// CHECK:         llvm.store %[[X]]
// CHECK:         llvm.getelementptr inbounds %[[CTX]][0, 1]
// CHECK:         llvm.store %[[Y]]
// CHECK:         %[[FN:.*]] = llvm.mlir.addressof @k_0_scale_par0 : !llvm.ptr
// CHECK-NEXT:    %[[NPTR:.*]] = llvm.mlir.addressof @dlc_num_threads : !llvm.ptr
// CHECK-NEXT:    %[[N:.*]] = llvm.load %[[NPTR]] : !llvm.ptr -> i32
// One thread: a plain call, libgomp's pool is not entered (fork-safe).
// CHECK-NEXT:    %[[SERIAL:.*]] = llvm.icmp "eq" %[[N]], %[[ONE]] : i32
// CHECK-NEXT:    llvm.cond_br %[[SERIAL]], ^[[CALL:bb[0-9]+]], ^[[PAR:bb[0-9]+]]
// CHECK-NEXT:  ^[[CALL]]:
// CHECK-NEXT:    llvm.call @k_0_scale_par0(%[[CTX]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.br ^[[JOIN:bb[0-9]+]]
// CHECK-NEXT:  ^[[PAR]]:
// CHECK-NEXT:    llvm.call @GOMP_parallel(%[[FN]], %[[CTX]], %[[N]], %[[FLAGS]]) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NEXT:    llvm.br ^[[JOIN]]
// CHECK-NEXT:  ^[[JOIN]]:
// CHECK-NEXT:    llvm.return

// CHECK-DAG:   llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-DAG:   llvm.func @omp_get_thread_num() -> i32
// CHECK-DAG:   llvm.func @omp_get_num_threads() -> i32

// CHECK-LABEL: llvm.func internal @k_0_scale_par0(%{{.*}}: !llvm.ptr)
// CHECK:         llvm.mlir.constant(2.000000e+00 : f32) : f32
// trip count of 1 to 6 step 2
// CHECK:         %[[TRIP:.*]] = llvm.mlir.constant(3) : i64
// CHECK:         llvm.call @omp_get_thread_num()
// CHECK:         llvm.call @omp_get_num_threads()
// CHECK:         llvm.add %[[TRIP]],
// CHECK:         llvm.sdiv
// CHECK-NOT:     GOMP_parallel
// CHECK:         llvm.return

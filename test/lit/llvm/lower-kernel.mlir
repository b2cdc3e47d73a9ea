// lower-to-llvm on a serial/vectorized/unrolled kernel: memrefs become noalias
// pointers with one GEP per access (row-major offset), index becomes i64, loops
// become header/body/exit blocks whose latch carries the loop kind.
// RUN: dlc-opt %s -p lower-to-llvm | filecheck %s
// RUN: dlc-opt %s -p lower-to-llvm | dlc-opt | filecheck %s --check-prefix=ROUNDTRIP

builtin.module {
  func.func @k_0_add(%a: memref<3x5xf32>, %b: memref<5xf32>, %out: memref<3x5xf32>) attributes {tloop.kernel, tloop.source = "graph.add"} {
    tloop.for %i = 0 to 3 unrolled {
      tloop.for %j = 0 to 5 vectorized {
        %x = memref.load %a[%i, %j] : memref<3x5xf32>
        %y = memref.load %b[%j] : memref<5xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %out[%i, %j] : memref<3x5xf32>
      }
    }
    func.return
  }
}

// CHECK-LABEL: llvm.func @k_0_add(%0: !llvm.ptr {llvm.noalias}, %1: !llvm.ptr {llvm.noalias}, %2: !llvm.ptr {llvm.noalias})
// CHECK-SAME:    attributes {tloop.kernel, tloop.source = "graph.add"}
// CHECK:         %[[LB:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[UB:.*]] = llvm.mlir.constant(3) : i64
// CHECK-NEXT:    %[[FIVE:.*]] = llvm.mlir.constant(5) : i64
// CHECK-NEXT:    %[[STEP:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    llvm.br ^[[HEAD:.*]](%[[LB]] : i64)
// CHECK-NEXT:  ^[[HEAD]](%[[I:.*]]: i64):
// CHECK-NEXT:    %[[C:.*]] = llvm.icmp "slt" %[[I]], %[[UB]] : i64
// CHECK-NEXT:    llvm.cond_br %[[C]], ^{{.*}}, ^[[EXIT:.*]]
// CHECK:       ^{{.*}}(%[[J:.*]]: i64):
// CHECK:         %[[ROW:.*]] = llvm.mul %[[I]], %[[FIVE]] : i64
// CHECK-NEXT:    %[[OFF:.*]] = llvm.add %[[ROW]], %[[J]] : i64
// CHECK-NEXT:    %[[PA:.*]] = llvm.getelementptr inbounds %0[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[PA]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[PB:.*]] = llvm.getelementptr inbounds %1[%[[J]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[Y:.*]] = llvm.load %[[PB]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[S:.*]] = llvm.fadd %[[X]], %[[Y]] : f32
// CHECK:         llvm.store %[[S]], %{{.*}} : f32, !llvm.ptr
// CHECK:         llvm.br ^{{.*}} {dlc.loop = "vectorized", dlc.vector_width = 8 : i64}
// CHECK:         llvm.br ^[[HEAD]](%{{.*}} : i64) {dlc.loop = "unrolled"}
// CHECK:       ^[[EXIT]]:
// CHECK-NEXT:    llvm.return
// CHECK:       llvm.mlir.global internal @dlc_num_threads(0 : i32)
// CHECK:       llvm.func @dlc_set_num_threads(%{{.*}}: i32)

// ROUNDTRIP: llvm.func @k_0_add
// ROUNDTRIP: llvm.br ^{{.*}} {dlc.loop = "vectorized", dlc.vector_width = 8 : i64}

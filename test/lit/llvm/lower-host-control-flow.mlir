// lower-to-llvm of host-level control flow (graph.if/loop/scan after lower-to-loops):
// scf.if -> cond_br on the loaded i1, scf.for -> header block with the induction
// variable as block argument, scf.while -> before block (the condition) branching
// to the body or the exit with the forwarded values.
// RUN: dlc-opt %s -p lower-to-llvm | filecheck %s
// RUN: dlc-opt %s -p lower-to-llvm | dlc-translate --to-llvm | filecheck %s --check-prefix=IR

builtin.module {
  func.func @k(%x: memref<3xf32>, %y: memref<3xf32>) attributes {tloop.kernel} {
    func.return
  }
  func.func @main(%c: memref<1xi1>, %m: memref<i64>, %x: memref<3xf32>, %out: memref<3xf32>) attributes {tloop.host, tloop.num_inputs = 3 : i64} {
    %zero = arith.constant 0 : index
    %cond = memref.load %c[%zero] : memref<1xi1>
    scf.if %cond {
      func.call @k(%x, %out) : (memref<3xf32>, memref<3xf32>) -> ()
    } else {
      %lb = arith.constant 0 : index
      %ub = arith.constant 5 : index
      %step = arith.constant 1 : index
      scf.for %t = %lb to %ub step %step {
        func.call @k(%x, %out) : (memref<3xf32>, memref<3xf32>) -> ()
      }
    }
    %trips = memref.load %m[] : memref<i64>
    %start = arith.constant 0 : i64
    %last = scf.while (%i = %start) : (i64) -> i64 {
      %go = arith.cmpi slt, %i, %trips : i64
      scf.condition(%go) %i : i64
    } do {
    ^bb0(%j: i64):
      func.call @k(%out, %x) : (memref<3xf32>, memref<3xf32>) -> ()
      %one = arith.constant 1 : i64
      %next = arith.addi %j, %one : i64
      scf.yield %next : i64
    }
    func.return
  }
}

// CHECK-LABEL: llvm.func @main(
// CHECK-SAME:  %[[C:[0-9]+]]: !llvm.ptr, %[[M:[0-9]+]]: !llvm.ptr, %[[X:[0-9]+]]: !llvm.ptr, %[[OUT:[0-9]+]]: !llvm.ptr)
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[UB:.*]] = llvm.mlir.constant(5) : i64
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[OK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %[[C]][%[[ZERO]]] : (!llvm.ptr, i64) -> !llvm.ptr, i1
// CHECK-NEXT:    %[[COND:.*]] = llvm.load %[[P]] : !llvm.ptr -> i1
// CHECK-NEXT:    llvm.cond_br %[[COND]], ^[[THEN:bb[0-9]+]], ^[[ELSE:bb[0-9]+]]
// CHECK-NEXT:  ^[[THEN]]:
// CHECK-NEXT:    llvm.call @k(%[[X]], %[[OUT]])
// CHECK-NEXT:    llvm.br ^[[MERGE:bb[0-9]+]]
// CHECK-NEXT:  ^[[ELSE]]:
// CHECK-NEXT:    llvm.br ^[[HEADER:bb[0-9]+]](%[[ZERO]] : i64)
// CHECK-NEXT:  ^[[HEADER]](%[[T:[0-9]+]]: i64):
// CHECK-NEXT:    %[[LT:.*]] = llvm.icmp "slt" %[[T]], %[[UB]] : i64
// CHECK-NEXT:    llvm.cond_br %[[LT]], ^[[BODY:bb[0-9]+]], ^[[EXIT:bb[0-9]+]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK-NEXT:    llvm.call @k(%[[X]], %[[OUT]])
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.add %[[T]], %[[ONE]] : i64
// CHECK-NEXT:    llvm.br ^[[HEADER]](%[[NEXT]] : i64)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    llvm.br ^[[MERGE]]
// CHECK-NEXT:  ^[[MERGE]]:
// CHECK-NEXT:    %[[TRIPS:.*]] = llvm.load %[[M]] : !llvm.ptr -> i64
// CHECK-NEXT:    llvm.br ^[[BEFORE:bb[0-9]+]](%[[ZERO]] : i64)
// CHECK-NEXT:  ^[[BEFORE]](%[[I:[0-9]+]]: i64):
// CHECK-NEXT:    %[[GO:.*]] = llvm.icmp "slt" %[[I]], %[[TRIPS]] : i64
// CHECK-NEXT:    llvm.cond_br %[[GO]], ^[[AFTER:bb[0-9]+]](%[[I]] : i64), ^[[DONE:bb[0-9]+]](%[[I]] : i64)
// CHECK-NEXT:  ^[[AFTER]](%[[J:[0-9]+]]: i64):
// CHECK-NEXT:    llvm.call @k(%[[OUT]], %[[X]])
// CHECK-NEXT:    %[[INC:.*]] = llvm.add %[[J]], %[[ONE]] : i64
// CHECK-NEXT:    llvm.br ^[[BEFORE]](%[[INC]] : i64)
// CHECK-NEXT:  ^[[DONE]](%{{[0-9]+}}: i64):
// CHECK-NEXT:    llvm.return %[[OK]] : i32

// The translated LLVM IR has the loops' phis.
// IR: define i32 @"main"(
// IR: phi i64
// IR: phi i64

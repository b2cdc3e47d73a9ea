// lower-to-loops keeps graph.if / graph.loop / graph.scan as host-level control
// flow (scf.if / scf.while / scf.for around the kernel calls of their bodies):
// nothing is unrolled; loop bodies' buffers are allocated once, before the loop.
// RUN: dlc-opt %s --split-input-file -p lower-to-loops | filecheck %s

func.func @branch(%c: tensor<1xi1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %r = graph.if %c, %x {
  ^bb0(%a: tensor<3xf32>):
    %n = graph.neg %a : (tensor<3xf32>) -> tensor<3xf32>
    graph.yield %n : (tensor<3xf32>) -> ()
  } {
  ^bb0(%a: tensor<3xf32>):
    graph.yield %a : (tensor<3xf32>) -> ()
  } : (tensor<1xi1>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// The condition is loaded from its buffer; each branch writes the result directly.
// CHECK-LABEL: func.func @branch(%c: memref<1xi1>, %x: memref<3xf32>, %result0: memref<3xf32>) attributes {tloop.host
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[COND:.*]] = memref.load %c[%[[ZERO]]] : memref<1xi1>
// CHECK-NEXT:    scf.if %[[COND]] {
// CHECK-NEXT:      func.call @branch_0_then_0_neg(%x, %result0)
// CHECK-NEXT:    } else {
// CHECK-NEXT:      func.call @branch_copy(%x, %result0)
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

func.func @loop(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<3xf32>) -> (tensor<3xf32>, tensor<1000x3xf32>) {
  %r, %s = graph.loop %m, %c, %x attributes {max_iterations = 1000 : i64, num_carried = 1 : i64} {
  ^bb0(%i: tensor<i64>, %k: tensor<i1>, %v: tensor<3xf32>):
    %w = graph.add %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    graph.yield %k, %w, %w : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> ()
  } : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<1000x3xf32>)
  func.return %r, %s : tensor<3xf32>, tensor<1000x3xf32>
}

// One kernel per body op (not 1000), the loop runs while i < min(M, 1000) and cond.
// CHECK-LABEL: func.func @loop_0_body_0_add(
// CHECK-NOT:   func.func @loop_0_body_0_add_1
// CHECK-LABEL: func.func @loop_write_row(%row: memref<3xf32>, %index: memref<i64>, %out: memref<1000x3xf32>)
// CHECK:         %[[AT:.*]] = memref.load %index[] : memref<i64>
// CHECK-NEXT:    arith.index_cast %[[AT]] : i64 to index
// CHECK-LABEL: func.func @loop(%m: memref<i64>, %c: memref<i1>, %x: memref<3xf32>, %result0: memref<3xf32>, %result1: memref<1000x3xf32>)
// CHECK-NEXT:    %[[M:.*]] = memref.load %m[] : memref<i64>
// CHECK-NEXT:    %[[BOUND:.*]] = arith.constant 1000 : i64
// CHECK-NEXT:    %trips = arith.minsi %[[M]], %[[BOUND]] : i64
// CHECK-NEXT:    %cond = memref.alloc() : memref<i1>
// CHECK-NEXT:    %[[C0:.*]] = memref.load %c[] : memref<i1>
// CHECK-NEXT:    memref.store %[[C0]], %cond[] : memref<i1>
// CHECK-NEXT:    %iteration = memref.alloc() : memref<i64>
// CHECK-NEXT:    func.call @loop_copy(%x, %result0)
// CHECK-NEXT:    func.call @loop_zero(%result1)
// CHECK-NEXT:    %buf0 = memref.alloc() : memref<3xf32>
// CHECK-NEXT:    %[[START:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    scf.while (%[[I:.*]] = %[[START]]) : (i64) -> i64 {
// CHECK-NEXT:      %[[K:.*]] = memref.load %cond[] : memref<i1>
// CHECK-NEXT:      %[[LT:.*]] = arith.cmpi slt, %[[I]], %trips : i64
// CHECK-NEXT:      %[[GO:.*]] = arith.andi %[[K]], %[[LT]] : i1
// CHECK-NEXT:      scf.condition(%[[GO]]) %[[I]] : i64
// CHECK-NEXT:    } do {
// CHECK-NEXT:    ^bb0(%i: i64):
// CHECK-NEXT:      memref.store %i, %iteration[] : memref<i64>
// CHECK-NEXT:      func.call @loop_0_body_0_add(%result0, %result0, %buf0)
// CHECK-NEXT:      func.call @loop_write_row(%buf0, %iteration, %result1)
// CHECK-NEXT:      func.call @loop_copy(%buf0, %result0)
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addi %i, %[[ONE]] : i64
// CHECK-NEXT:      scf.yield %[[NEXT]] : i64
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %buf0 : memref<3xf32>
// CHECK-NEXT:    memref.dealloc %cond : memref<i1>
// CHECK-NEXT:    memref.dealloc %iteration : memref<i64>
// CHECK-NEXT:    func.return

// -----

func.func @scan(%init: tensor<2xf32>, %xs: tensor<5x2xf32>) -> (tensor<2xf32>, tensor<5x2xf32>) {
  %s, %ys = graph.scan %init, %xs attributes {num_carried = 1 : i64, num_scan_inputs = 1 : i64, scan_input_directions = array<i64: 1>} {
  ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
    %n = graph.add %acc, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    graph.yield %n, %n : (tensor<2xf32>, tensor<2xf32>) -> ()
  } : (tensor<2xf32>, tensor<5x2xf32>) -> (tensor<2xf32>, tensor<5x2xf32>)
  func.return %s, %ys : tensor<2xf32>, tensor<5x2xf32>
}

// A reverse scan input reads row 4 - t; the forward output writes row t.
// CHECK-LABEL: func.func @scan(%init: memref<2xf32>, %xs: memref<5x2xf32>, %result0: memref<2xf32>, %result1: memref<5x2xf32>)
// CHECK-NEXT:    func.call @scan_copy(%init, %result0)
// CHECK-NEXT:    %index = memref.alloc() : memref<i64>
// CHECK-NEXT:    %reverse_index = memref.alloc() : memref<i64>
// CHECK-NEXT:    %slice0 = memref.alloc() : memref<2xf32>
// CHECK-NEXT:    %buf0 = memref.alloc() : memref<2xf32>
// CHECK-NEXT:    %[[LB:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 1 : index
// CHECK-NEXT:    scf.for %t = %[[LB]] to %[[UB]] step %[[STEP]] {
// CHECK-NEXT:      %[[T:.*]] = arith.index_cast %t : index to i64
// CHECK-NEXT:      memref.store %[[T]], %index[] : memref<i64>
// CHECK-NEXT:      %[[LAST:.*]] = arith.constant 4 : i64
// CHECK-NEXT:      %[[REV:.*]] = arith.subi %[[LAST]], %[[T]] : i64
// CHECK-NEXT:      memref.store %[[REV]], %reverse_index[] : memref<i64>
// CHECK-NEXT:      func.call @scan_read_row(%xs, %reverse_index, %slice0)
// CHECK-NEXT:      func.call @scan_0_body_0_add(%result0, %slice0, %buf0)
// CHECK-NEXT:      func.call @scan_write_row(%buf0, %index, %result1)
// CHECK-NEXT:      func.call @scan_copy(%buf0, %result0)
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %buf0 : memref<2xf32>
// CHECK-NOT:     scf.for

// -----

// A loop nested in an if; a body that swaps its two carried values stages one
// through a temporary (the states are updated as if all at once).
func.func @nested(%c: tensor<i1>, %m: tensor<i64>, %a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %r:2 = graph.if %c, %m, %a, %b {
  ^bb0(%n: tensor<i64>, %x: tensor<2xf32>, %y: tensor<2xf32>):
    %t = graph.constant dense<true> : tensor<i1>
    %p, %q = graph.loop %n, %t, %x, %y attributes {max_iterations = 7 : i64, num_carried = 2 : i64} {
    ^bb0(%i: tensor<i64>, %k: tensor<i1>, %u: tensor<2xf32>, %v: tensor<2xf32>):
      graph.yield %k, %v, %u : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> ()
    } : (tensor<i64>, tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    graph.yield %p, %q : (tensor<2xf32>, tensor<2xf32>) -> ()
  } {
  ^bb0(%n: tensor<i64>, %x: tensor<2xf32>, %y: tensor<2xf32>):
    graph.yield %x, %y : (tensor<2xf32>, tensor<2xf32>) -> ()
  } : (tensor<i1>, tensor<i64>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  func.return %r#0, %r#1 : tensor<2xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @nested(
// CHECK:         scf.if
// CHECK:           tloop.weight "nested_0_then.const0" : memref<i1>
// CHECK:           %[[S1:.*]] = memref.alloc() : memref<2xf32>
// CHECK-NEXT:      %[[S2:.*]] = memref.alloc() : memref<2xf32>
// CHECK:           scf.while
// CHECK:           } do {
// CHECK:             func.call @nested_copy(%result1, %[[S1]])
// CHECK-NEXT:        func.call @nested_copy(%result0, %[[S2]])
// CHECK-NEXT:        func.call @nested_copy(%[[S1]], %result0)
// CHECK-NEXT:        func.call @nested_copy(%[[S2]], %result1)
// CHECK:           memref.dealloc %[[S1]] : memref<2xf32>
// CHECK-NEXT:      memref.dealloc %[[S2]] : memref<2xf32>
// CHECK:         } else {
// CHECK-NEXT:      func.call @nested_copy(%a, %result0)
// CHECK-NEXT:      func.call @nested_copy(%b, %result1)
// CHECK-NEXT:    }

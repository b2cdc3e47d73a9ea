// Kernels of lower-to-loops: loop order and names, guards, broadcasting.
// RUN: dlc-opt %s --split-input-file -p lower-to-loops | filecheck %s

// Padding only on top: one check (ih >= 0), a load at the clamped row and a
// select against 0, no branch; no check for the bottom or the columns, which no
// window can cross. Reduction loops are innermost.
func.func @conv(%x: tensor<1x3x7x7xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x2x6x3xf32> {
  %y = graph.conv2d %x, %w {padding = array<i64: 1, 0, 0, 1>, strides = array<i64: 1, 2>} : (tensor<1x3x7x7xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x6x3xf32>
  func.return %y : tensor<1x2x6x3xf32>
}

// CHECK-LABEL: func.func @conv_0_conv2d(%x: memref<1x3x7x7xf32>, %w: memref<2x3x3x3xf32>, %out: memref<1x2x6x3xf32>) attributes {tloop.kernel, tloop.source = "graph.conv2d", tloop.form = "conv2d.direct"}
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         tloop.for %n = 0 to 1 {
// CHECK-NEXT:      tloop.for %oc = 0 to 2 {
// CHECK-NEXT:        tloop.for %oh = 0 to 6 {
// CHECK-NEXT:          tloop.for %ow = 0 to 3 {
// CHECK-NEXT:            memref.store %[[ZERO]], %out[%n, %oc, %oh, %ow]
// CHECK-NEXT:            tloop.for %ic = 0 to 3 {
// CHECK-NEXT:              tloop.for %kh = 0 to 3 {
// CHECK-NEXT:                tloop.for %kw = 0 to 3 {
// CHECK:                       %[[IH:.*]] = arith.subi
// CHECK:                       %[[OK:.*]] = arith.cmpi sge, %[[IH]], %[[C0]] : index
// CHECK-NEXT:                  %[[CIH:.*]] = arith.maxsi %[[IH]], %[[C0]] : index
// CHECK-NEXT:                  %[[XL:.*]] = memref.load %x[%n, %ic, %[[CIH]], %{{.*}}]
// CHECK-NEXT:                  %[[X:.*]] = arith.select %[[OK]], %[[XL]], %[[ZERO]] : f32
// CHECK-NEXT:                  %[[W:.*]] = memref.load %w[%oc, %ic, %kh, %kw]
// CHECK-NEXT:                  %[[ACC:.*]] = memref.load %out[%n, %oc, %oh, %ow]
// CHECK-NEXT:                  %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:                  %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:                  memref.store %[[S]], %out[%n, %oc, %oh, %ow]
// CHECK-NOT:                   scf.if
// CHECK:         func.return
// CHECK-LABEL: func.func @conv(%x: memref<1x3x7x7xf32>, %w: memref<2x3x3x3xf32>, %result0: memref<1x2x6x3xf32>) attributes {tloop.host, tloop.num_inputs = 2 : i64}
// CHECK-NEXT:    func.call @conv_0_conv2d(%x, %w, %result0)

// -----

// Batch dims broadcast (the lhs batch dim of size 1 is indexed with 0).
func.func @bmm(%a: tensor<1x2x3xf32>, %b: tensor<5x3x4xf32>) -> tensor<5x2x4xf32> {
  %c = graph.matmul %a, %b : (tensor<1x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>
  func.return %c : tensor<5x2x4xf32>
}

// CHECK-LABEL: func.func @bmm_0_matmul(%a: memref<1x2x3xf32>, %b: memref<5x3x4xf32>, %out: memref<5x2x4xf32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         tloop.for %b0 = 0 to 5 {
// CHECK-NEXT:      tloop.for %m = 0 to 2 {
// CHECK-NEXT:        tloop.for %n = 0 to 4 {
// CHECK-NEXT:          memref.store %{{.*}}, %out[%b0, %m, %n]
// CHECK-NEXT:          tloop.for %k = 0 to 3 {
// CHECK-NEXT:            memref.load %a[%[[C0]], %m, %k]
// CHECK-NEXT:            memref.load %b[%b0, %k, %n]

// -----

// ui8 tensors are i8 memrefs; the unsigned semantics is in the ops.
func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %c = graph.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  func.return %c : tensor<4xui8>
}

// CHECK-LABEL: func.func @unsigned_0_div(%in0: memref<4xi8>, %in1: memref<4xi8>, %out: memref<4xi8>)
// CHECK:         %[[Z:.*]] = arith.cmpi eq
// CHECK-NEXT:    %[[D:.*]] = arith.select %[[Z]]
// CHECK-NEXT:    arith.divui %{{.*}}, %[[D]] : i8

// -----

// Constant padding: branch-free, the index clamped into the input and the loaded value
// selected against the pad value (the inner loop vectorizes).
func.func @pad(%x: tensor<3xf32>) -> tensor<6xf32> {
  %y = graph.pad %x {pads = array<i64: 1, 2>, value = 5.0 : f32} : (tensor<3xf32>) -> tensor<6xf32>
  func.return %y : tensor<6xf32>
}

// CHECK-LABEL: func.func @pad_0_pad(%x: memref<3xf32>, %out: memref<6xf32>)
// CHECK-DAG:     %[[FIVE:.*]] = arith.constant 5.000000e+00 : f32
// CHECK:         tloop.for %d0 = 0 to 6 {
// CHECK:           %[[OK:.*]] = arith.andi
// CHECK:           %[[LO:.*]] = arith.maxsi
// CHECK-NEXT:      %[[I:.*]] = arith.minsi %[[LO]]
// CHECK-NEXT:      %[[L:.*]] = memref.load %x[%[[I]]]
// CHECK-NEXT:      %[[V:.*]] = arith.select %[[OK]], %[[L]], %[[FIVE]] : f32
// CHECK-NEXT:      memref.store %[[V]], %out[%d0]

// -----

// softmax: row max and sum in kernel-local scratch; three passes per row.
func.func @softmax(%x: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %y = graph.softmax %x {axis = 1 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  func.return %y : tensor<2x3x5xf32>
}

// CHECK-LABEL: func.func @softmax_0_softmax(%x: memref<2x3x5xf32>, %out: memref<2x3x5xf32>)
// CHECK:         %row_max = memref.alloca() : memref<2x5xf32>
// CHECK-NEXT:    %row_sum = memref.alloca() : memref<2x5xf32>
// CHECK-NEXT:    tloop.for %d0 = 0 to 2 {
// CHECK-NEXT:      tloop.for %d1 = 0 to 5 {
// CHECK:             tloop.for %r = 0 to 3 {
// CHECK:               arith.maximumf
// CHECK:             tloop.for %r2 = 0 to 3 {
// CHECK:               math.exp
// CHECK:             tloop.for %r3 = 0 to 3 {
// CHECK:               arith.divf

// -----

// avg_pool2d without padding effects divides by a constant window size.
func.func @avg(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32> {
  %y = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}

// CHECK-LABEL: func.func @avg_0_avg_pool2d(
// CHECK-DAG:     %[[FOUR:.*]] = arith.constant 4.000000e+00 : f32
// CHECK:         tloop.for %kh = 0 to 2 {
// CHECK-NEXT:      tloop.for %kw = 0 to 2 {
// CHECK-NOT:         scf.if
// CHECK:         arith.divf %{{.*}}, %[[FOUR]] : f32

// -----

// argmax: the first NaN wins, otherwise the first maximum.
func.func @argmax(%x: tensor<3x5xf32>) -> tensor<3xi64> {
  %y = graph.argmax %x {axis = 1 : i64} : (tensor<3x5xf32>) -> tensor<3xi64>
  func.return %y : tensor<3xi64>
}

// CHECK-LABEL: func.func @argmax_0_argmax(%x: memref<3x5xf32>, %out: memref<3xi64>)
// CHECK:         tloop.for %r = 1 to 5 {
// CHECK:           %[[GT:.*]] = arith.cmpf ogt
// CHECK:           arith.cmpf uno
// CHECK:           %[[TAKE:.*]] = arith.ori %[[GT]], %{{.*}} : i1
// CHECK-NEXT:      arith.select %[[TAKE]], %r, %{{.*}} : index

// -----

// gather: negative indices wrap, out-of-range ones are clamped.
func.func @gather(%d: tensor<5x3xf32>, %i: tensor<4xi32>) -> tensor<4x3xf32> {
  %y = graph.gather %d, %i {axis = 0 : i64} : (tensor<5x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @gather_0_gather(%data: memref<5x3xf32>, %indices: memref<4xi32>, %out: memref<4x3xf32>)
// CHECK:         %[[RAW:.*]] = memref.load %indices[%d0]
// CHECK-NEXT:    %[[WIDE:.*]] = arith.extsi %[[RAW]] : i32 to i64
// CHECK-NEXT:    %[[IDX:.*]] = arith.index_cast %[[WIDE]] : i64 to index
// CHECK-NEXT:    %[[NEG:.*]] = arith.cmpi slt, %[[IDX]]
// CHECK-NEXT:    %[[UP:.*]] = arith.addi %[[IDX]]
// CHECK-NEXT:    %[[W:.*]] = arith.select %[[NEG]], %[[UP]], %[[IDX]] : index
// CHECK-NEXT:    %[[LO:.*]] = arith.maxsi %[[W]]
// CHECK-NEXT:    %[[HI:.*]] = arith.minsi %[[LO]]
// CHECK-NEXT:    memref.load %data[%[[HI]], %d1]

// alter-op-layout: conv2d chains run in NCHW{b}c; layout transforms only at the boundaries,
// weights and per-channel constants re-laid out at compile time.
// RUN: dlc-opt %s --split-input-file -p alter-op-layout | filecheck %s
// RUN: dlc-opt %s --split-input-file -p 'alter-op-layout{block=8}' | filecheck %s --check-prefix=B8

// conv -> bias -> relu -> conv -> residual add -> relu: one transform in, one out.
func.func @chain(%x: tensor<1x3x11x13xf32>) -> tensor<1x20x6x7xf32> {
  %w1 = graph.constant dense<0.5> : tensor<20x3x3x3xf32>
  %b1 = graph.constant dense<0.25> : tensor<20x1x1xf32>
  %w2 = graph.constant dense<0.125> : tensor<20x20x3x3xf32>
  %c = graph.conv2d %x, %w1 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x11x13xf32>, tensor<20x3x3x3xf32>) -> tensor<1x20x6x7xf32>
  %a = graph.add %c, %b1 : (tensor<1x20x6x7xf32>, tensor<20x1x1xf32>) -> tensor<1x20x6x7xf32>
  %r = graph.relu %a : (tensor<1x20x6x7xf32>) -> tensor<1x20x6x7xf32>
  %c2 = graph.conv2d %r, %w2 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x20x6x7xf32>, tensor<20x20x3x3xf32>) -> tensor<1x20x6x7xf32>
  %s = graph.add %c2, %r : (tensor<1x20x6x7xf32>, tensor<1x20x6x7xf32>) -> tensor<1x20x6x7xf32>
  %o = graph.relu %s : (tensor<1x20x6x7xf32>) -> tensor<1x20x6x7xf32>
  func.return %o : tensor<1x20x6x7xf32>
}
// CHECK-LABEL: func.func @chain
// CHECK-NOT:     graph.conv2d %
// CHECK:         %[[XB:.*]] = graph.layout_transform %x {src = "NCHW", dst = "NCHW3c"} : (tensor<1x3x11x13xf32>) -> tensor<1x1x11x13x3xf32>
// CHECK-NEXT:    %[[W1:.*]] = graph.weight "const.layout_transform" : tensor<2x1x3x3x3x16xf32>
// CHECK-NEXT:    %[[XP:.*]] = graph.pad %[[XB]] {pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 1, 1, 0>}
// CHECK-NEXT:    %[[C1:.*]] = graph.conv2d_nchwc %[[XP]], %[[W1]] {strides = array<i64: 2, 2>} : (tensor<1x1x13x15x3xf32>, tensor<2x1x3x3x3x16xf32>) -> tensor<1x2x6x7x16xf32>
// the bias: [20,1,1] -> [1,2,1,1,16], channels 20..31 zero, folded to a constant
// CHECK-NEXT:    %[[B1:.*]] = graph.constant dense<{{.*}}2.500000e-01, 0.000000e+00{{.*}}> : tensor<1x2x1x1x16xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[C1]], %[[B1]] : (tensor<1x2x6x7x16xf32>, tensor<1x2x1x1x16xf32>) -> tensor<1x2x6x7x16xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[A]] : (tensor<1x2x6x7x16xf32>) -> tensor<1x2x6x7x16xf32>
// CHECK-NEXT:    %[[W2:.*]] = graph.weight "const.layout_transform_1" : tensor<2x2x3x3x16x16xf32>
// CHECK-NEXT:    %[[RP:.*]] = graph.pad %[[R]]
// CHECK-NEXT:    %[[C2:.*]] = graph.conv2d_nchwc %[[RP]], %[[W2]] : (tensor<1x2x8x9x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x6x7x16xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[C2]], %[[R]] : (tensor<1x2x6x7x16xf32>, tensor<1x2x6x7x16xf32>) -> tensor<1x2x6x7x16xf32>
// CHECK-NEXT:    %[[O:.*]] = graph.relu %[[S]]
// CHECK-NEXT:    %[[Y:.*]] = graph.layout_transform %[[O]] {src = "NCHW16c", dst = "NCHW", channels = 20 : i64} : (tensor<1x2x6x7x16xf32>) -> tensor<1x20x6x7xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<1x20x6x7xf32>
// B8-LABEL: func.func @chain
// B8:         graph.conv2d_nchwc {{.*}} -> tensor<1x3x6x7x8xf32>
// B8:         graph.layout_transform {{.*}} {src = "NCHW8c", dst = "NCHW", channels = 20 : i64}

// -----

// An op without a blocked form (a reduction over channels) reads the conv result through
// one transform back; the relu both read stays blocked and gets its own transform for the return.
func.func @unsupported_consumer(%x: tensor<1x16x8x8xf32>) -> (tensor<1x1x8x8xf32>, tensor<1x16x8x8xf32>) {
  %w = graph.constant dense<1.0> : tensor<16x16x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %r = graph.relu %c : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %p = graph.reduce_max %r {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<1x16x8x8xf32>) -> tensor<1x1x8x8xf32>
  func.return %p, %r : tensor<1x1x8x8xf32>, tensor<1x16x8x8xf32>
}
// CHECK-LABEL: func.func @unsupported_consumer
// CHECK:         %[[XB:.*]] = graph.layout_transform %x {src = "NCHW", dst = "NCHW16c"}
// CHECK-NEXT:    %[[W:.*]] = graph.weight "const.layout_transform" : tensor<1x1x1x1x16x16xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d_nchwc %[[XB]], %[[W]]
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[C]] : (tensor<1x1x8x8x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-NEXT:    %[[BACK:.*]] = graph.layout_transform %[[R]] {src = "NCHW16c", dst = "NCHW", channels = 16 : i64}
// CHECK-NEXT:    %[[P:.*]] = graph.reduce_max %[[BACK]]
// CHECK-NEXT:    func.return %[[P]], %[[BACK]]
// CHECK-NOT:     graph.layout_transform

// -----

// Left alone: grouped and NHWC convs, and a conv whose weights are a run-time input
// are converted with a run-time weight transform (nothing to fold).
func.func @left_alone(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>, %h: tensor<1x5x5x4xf32>, %k: tensor<3x3x4x4xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x3x3x4xf32>) {
  %g = graph.conv2d %x, %w {groups = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %n = graph.conv2d %h, %k {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x5x5x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x3x3x4xf32>
  func.return %g, %n : tensor<1x4x3x3xf32>, tensor<1x3x3x4xf32>
}
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT:    graph.conv2d %x, %w {groups = 2 : i64}
// CHECK-NEXT:    graph.conv2d %h, %k {data_layout = "NHWC", kernel_layout = "HWIO"}
// CHECK-NEXT:    func.return

// -----

func.func @runtime_weight(%x: tensor<1x4x5x5xf32>, %w: tensor<8x4x1x1xf32>) -> tensor<1x8x5x5xf32> {
  %c = graph.conv2d %x, %w : (tensor<1x4x5x5xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x5x5xf32>
  func.return %c : tensor<1x8x5x5xf32>
}
// CHECK-LABEL: func.func @runtime_weight
// CHECK-NEXT:    graph.layout_transform %x {src = "NCHW", dst = "NCHW4c"}
// CHECK-NEXT:    graph.layout_transform %w {src = "OIHW", dst = "OIHW4i16o"} : (tensor<8x4x1x1xf32>) -> tensor<1x1x1x1x4x16xf32>
// CHECK-NEXT:    graph.conv2d_nchwc
// CHECK-NEXT:    graph.layout_transform {{.*}} {src = "NCHW16c", dst = "NCHW", channels = 8 : i64}

// -----

// Pools and a global pool (legalize's reduce_mean over H, W: a pool with an H x W window)
// of blocked values stay blocked: 20 channels (12 padded lanes) go back to NCHW only at
// the return.
func.func @pools(%x: tensor<1x4x9x9xf32>) -> tensor<1x20x1x1xf32> {
  %w = graph.constant dense<0.5> : tensor<20x4x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x4x9x9xf32>, tensor<20x4x1x1xf32>) -> tensor<1x20x9x9xf32>
  %m = graph.max_pool2d %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x20x9x9xf32>) -> tensor<1x20x5x5xf32>
  %a = graph.avg_pool2d %m {kernel = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x20x5x5xf32>) -> tensor<1x20x4x4xf32>
  %g = graph.reduce_mean %a {axes = array<i64: -1, 2>, keepdims = 1 : i64} : (tensor<1x20x4x4xf32>) -> tensor<1x20x1x1xf32>
  func.return %g : tensor<1x20x1x1xf32>
}
// CHECK-LABEL: func.func @pools
// CHECK:         %[[C:.*]] = graph.conv2d_nchwc
// CHECK-NEXT:    %[[M:.*]] = graph.max_pool2d_nchwc %[[C]] {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x2x9x9x16xf32>) -> tensor<1x2x5x5x16xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.avg_pool2d_nchwc %[[M]] {kernel = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x4x4x16xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.avg_pool2d_nchwc %[[A]] {kernel = array<i64: 4, 4>} : (tensor<1x2x4x4x16xf32>) -> tensor<1x2x1x1x16xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.layout_transform %[[G]] {src = "NCHW16c", dst = "NCHW", channels = 20 : i64} : (tensor<1x2x1x1x16xf32>) -> tensor<1x20x1x1xf32>
// CHECK-NEXT:    func.return %[[Y]]

// -----

// Left plain: an NHWC pool, a reduction that is not over exactly H and W, one without keepdims.
func.func @plain_reductions(%x: tensor<1x4x6x6xf32>) -> (tensor<1x16x1x6xf32>, tensor<1x16xf32>, tensor<1x15x5x6xf32>) {
  %w = graph.constant dense<0.5> : tensor<16x4x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x4x6x6xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x6x6xf32>
  %h = graph.reduce_max %c {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<1x16x6x6xf32>) -> tensor<1x16x1x6xf32>
  %k = graph.reduce_mean %c {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x16x6x6xf32>) -> tensor<1x16xf32>
  %n = graph.max_pool2d %c {kernel = array<i64: 2, 2>, layout = "NHWC"} : (tensor<1x16x6x6xf32>) -> tensor<1x15x5x6xf32>
  func.return %h, %k, %n : tensor<1x16x1x6xf32>, tensor<1x16xf32>, tensor<1x15x5x6xf32>
}
// CHECK-LABEL: func.func @plain_reductions
// CHECK:         graph.conv2d_nchwc
// CHECK-NEXT:    %[[BACK:.*]] = graph.layout_transform {{.*}} {src = "NCHW16c", dst = "NCHW", channels = 16 : i64}
// CHECK-NEXT:    graph.reduce_max %[[BACK]] {axes = array<i64: 2>
// CHECK-NEXT:    graph.reduce_mean %[[BACK]] {axes = array<i64: 2, 3>, keepdims = 0 : i64}
// CHECK-NEXT:    graph.max_pool2d %[[BACK]] {{.*}}layout = "NHWC"
// CHECK-NOT:     _nchwc

// -----

// A channel concat of blocked values whose counts are multiples of 16 joins the blocks
// (axis 1 of NCHW16c); a plain operand with such a count is blocked first.
func.func @concat_blocks(%x: tensor<1x4x5x7xf32>, %p: tensor<1x32x5x7xf32>) -> tensor<1x64x5x7xf32> {
  %w1 = graph.constant dense<0.5> : tensor<16x4x1x1xf32>
  %w2 = graph.constant dense<0.25> : tensor<16x4x3x3xf32>
  %a = graph.conv2d %x, %w1 : (tensor<1x4x5x7xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x5x7xf32>
  %b = graph.conv2d %x, %w2 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x5x7xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x5x7xf32>
  %cat = graph.concat %a, %p, %b {axis = -3 : i64} : (tensor<1x16x5x7xf32>, tensor<1x32x5x7xf32>, tensor<1x16x5x7xf32>) -> tensor<1x64x5x7xf32>
  %r = graph.relu %cat : (tensor<1x64x5x7xf32>) -> tensor<1x64x5x7xf32>
  func.return %r : tensor<1x64x5x7xf32>
}
// CHECK-LABEL: func.func @concat_blocks
// CHECK:         %[[A:.*]] = graph.conv2d_nchwc
// CHECK:         %[[B:.*]] = graph.conv2d_nchwc
// CHECK-NEXT:    %[[PB:.*]] = graph.layout_transform %p {src = "NCHW", dst = "NCHW16c"} : (tensor<1x32x5x7xf32>) -> tensor<1x2x5x7x16xf32>
// CHECK-NEXT:    %[[CAT:.*]] = graph.concat %[[A]], %[[PB]], %[[B]] {axis = 1 : i64} : (tensor<1x1x5x7x16xf32>, tensor<1x2x5x7x16xf32>, tensor<1x1x5x7x16xf32>) -> tensor<1x4x5x7x16xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[CAT]]
// CHECK-NEXT:    graph.layout_transform %[[R]] {src = "NCHW16c", dst = "NCHW", channels = 64 : i64}
// CHECK-NEXT:    func.return

// -----

// 16 + 20 channels: the second operand's padding would land in the middle of the result,
// so the concat stays plain and both operands come back to NCHW; the conv reading it
// re-blocks the result.
func.func @concat_not_multiple(%x: tensor<1x4x5x7xf32>) -> tensor<1x16x5x7xf32> {
  %w1 = graph.constant dense<0.5> : tensor<16x4x1x1xf32>
  %w2 = graph.constant dense<0.25> : tensor<20x4x1x1xf32>
  %w3 = graph.constant dense<0.125> : tensor<16x36x1x1xf32>
  %a = graph.conv2d %x, %w1 : (tensor<1x4x5x7xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x5x7xf32>
  %b = graph.conv2d %x, %w2 : (tensor<1x4x5x7xf32>, tensor<20x4x1x1xf32>) -> tensor<1x20x5x7xf32>
  %cat = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x16x5x7xf32>, tensor<1x20x5x7xf32>) -> tensor<1x36x5x7xf32>
  %y = graph.conv2d %cat, %w3 : (tensor<1x36x5x7xf32>, tensor<16x36x1x1xf32>) -> tensor<1x16x5x7xf32>
  func.return %y : tensor<1x16x5x7xf32>
}
// CHECK-LABEL: func.func @concat_not_multiple
// CHECK:         %[[A:.*]] = graph.conv2d_nchwc
// CHECK-NEXT:    %[[AP:.*]] = graph.layout_transform %[[A]] {src = "NCHW16c", dst = "NCHW", channels = 16 : i64}
// CHECK:         %[[B:.*]] = graph.conv2d_nchwc
// CHECK-NEXT:    %[[BP:.*]] = graph.layout_transform %[[B]] {src = "NCHW16c", dst = "NCHW", channels = 20 : i64}
// CHECK-NEXT:    %[[CAT:.*]] = graph.concat %[[AP]], %[[BP]] {axis = 1 : i64} : (tensor<1x16x5x7xf32>, tensor<1x20x5x7xf32>) -> tensor<1x36x5x7xf32>
// CHECK-NEXT:    graph.layout_transform %[[CAT]] {src = "NCHW", dst = "NCHW16c"}
// CHECK:         graph.conv2d_nchwc

// -----

// A concat of plain values only, or along another axis, is not touched.
func.func @concat_left_alone(%x: tensor<1x16x5x7xf32>, %y: tensor<1x16x5x7xf32>) -> (tensor<1x32x5x7xf32>, tensor<1x16x10x7xf32>) {
  %w = graph.constant dense<0.5> : tensor<16x16x1x1xf32>
  %a = graph.conv2d %x, %w : (tensor<1x16x5x7xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x5x7xf32>
  %c1 = graph.concat %x, %y {axis = 1 : i64} : (tensor<1x16x5x7xf32>, tensor<1x16x5x7xf32>) -> tensor<1x32x5x7xf32>
  %c2 = graph.concat %a, %y {axis = 2 : i64} : (tensor<1x16x5x7xf32>, tensor<1x16x5x7xf32>) -> tensor<1x16x10x7xf32>
  func.return %c1, %c2 : tensor<1x32x5x7xf32>, tensor<1x16x10x7xf32>
}
// CHECK-LABEL: func.func @concat_left_alone
// CHECK:         %[[A:.*]] = graph.conv2d_nchwc
// CHECK-NEXT:    %[[AP:.*]] = graph.layout_transform %[[A]] {src = "NCHW16c", dst = "NCHW", channels = 16 : i64}
// CHECK-NEXT:    graph.concat %x, %y {axis = 1 : i64} : (tensor<1x16x5x7xf32>, tensor<1x16x5x7xf32>) -> tensor<1x32x5x7xf32>
// CHECK-NEXT:    graph.concat %[[AP]], %y {axis = 2 : i64}

// -----

// Other reductions over exactly H and W (keepdims) reduce the blocked tensor's axes 2, 3.
func.func @spatial_sum(%x: tensor<1x4x6x5xf32>) -> tensor<1x16x1x1xf32> {
  %w = graph.constant dense<0.5> : tensor<16x4x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x4x6x5xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x6x5xf32>
  %s = graph.reduce_sum %c {axes = array<i64: 3, -2>, keepdims = 1 : i64} : (tensor<1x16x6x5xf32>) -> tensor<1x16x1x1xf32>
  func.return %s : tensor<1x16x1x1xf32>
}
// CHECK-LABEL: func.func @spatial_sum
// CHECK:         %[[C:.*]] = graph.conv2d_nchwc
// CHECK-NEXT:    %[[S:.*]] = graph.reduce_sum %[[C]] {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x1x6x5x16xf32>) -> tensor<1x1x1x1x16xf32>
// CHECK-NEXT:    graph.layout_transform %[[S]] {src = "NCHW16c", dst = "NCHW", channels = 16 : i64}

// -----

// A depthwise conv (groups = channels) stays blocked: stride 1 reads an explicit pad, stride 2
// keeps its padding in the op; the filters become one OIHW1i16o weight.
func.func @depthwise(%x: tensor<1x20x7x9xf32>) -> tensor<1x20x4x5xf32> {
  %w = graph.constant dense<0.5> : tensor<20x20x1x1xf32>
  %d1 = graph.constant dense<0.25> : tensor<20x1x3x3xf32>
  %d2 = graph.constant dense<0.125> : tensor<20x1x3x3xf32>
  %c = graph.conv2d %x, %w : (tensor<1x20x7x9xf32>, tensor<20x20x1x1xf32>) -> tensor<1x20x7x9xf32>
  %a = graph.conv2d %c, %d1 {groups = 20 : i64, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x20x7x9xf32>, tensor<20x1x3x3xf32>) -> tensor<1x20x7x9xf32>
  %b = graph.conv2d %a, %d2 {groups = 20 : i64, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x20x7x9xf32>, tensor<20x1x3x3xf32>) -> tensor<1x20x4x5xf32>
  func.return %b : tensor<1x20x4x5xf32>
}
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT:     graph.conv2d %
// CHECK:         %[[C:.*]] = graph.conv2d_nchwc
// CHECK:         %[[D1:.*]] = graph.weight "{{.*}}" : tensor<2x1x3x3x1x16xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.pad %[[C]] {pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 1, 1, 0>}
// CHECK-NEXT:    %[[A:.*]] = graph.depthwise_conv2d_nchwc %[[P]], %[[D1]] : (tensor<1x2x9x11x16xf32>, tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x7x9x16xf32>
// CHECK-NEXT:    %[[D2:.*]] = graph.weight "{{.*}}" : tensor<2x1x3x3x1x16xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.depthwise_conv2d_nchwc %[[A]], %[[D2]] {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x7x9x16xf32>, tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x4x5x16xf32>
// CHECK-NEXT:    graph.layout_transform %[[B]] {src = "NCHW16c", dst = "NCHW", channels = 20 : i64}
// CHECK-NOT:     graph.layout_transform

// Verifier rules of the blocked-layout ops, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<1x20x5x7xf32>) {
  // expected-error @+1 {{graph.layout_transform: unsupported layout change NCHW -> NHWC}}
  %0 = graph.layout_transform %x {src = "NCHW", dst = "NHWC"} : (tensor<1x20x5x7xf32>) -> tensor<1x5x7x20xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x7x16xf32>) {
  // expected-error @+1 {{graph.layout_transform: channels=40 does not fit 2 blocks of 16}}
  %0 = graph.layout_transform %x {src = "NCHW16c", dst = "NCHW", channels = 40 : i64} : (tensor<1x2x5x7x16xf32>) -> tensor<1x40x5x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x7x8xf32>) {
  // expected-error @+1 {{graph.layout_transform: NCHW16c input must be 5-D with a last dim of 16, got [1, 2, 5, 7, 8]}}
  %0 = graph.layout_transform %x {src = "NCHW16c", dst = "NCHW"} : (tensor<1x2x5x7x8xf32>) -> tensor<1x16x5x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x20x5x7xf32>) {
  // expected-error @+1 {{graph.layout_transform: attribute 'channels' applies only to NCHW{b}c -> NCHW}}
  %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW16c", channels = 20 : i64} : (tensor<1x20x5x7xf32>) -> tensor<1x2x5x7x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x20x5x7xf32>) {
  // expected-error @+1 {{graph.layout_transform: result type tensor<1x1x5x7x16xf32> does not match the inferred type tensor<1x2x5x7x16xf32>}}
  %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW16c"} : (tensor<1x20x5x7xf32>) -> tensor<1x1x5x7x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x7x16xf32>, %w: tensor<2x1x3x3x16x16xf32>) {
  // expected-error @+1 {{graph.conv2d_nchwc: weight input blocks 1x16 do not match the input's channel blocks 2x16}}
  %0 = graph.conv2d_nchwc %x, %w : (tensor<1x2x5x7x16xf32>, tensor<2x1x3x3x16x16xf32>) -> tensor<1x2x3x5x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x20x5x7xf32>, %w: tensor<2x1x3x3x16x16xf32>) {
  // expected-error @+1 {{graph.conv2d_nchwc: input must be 5-D (NCHW{b}c) and weight 6-D (OIHW{i}i{o}o), got ranks 4 and 6}}
  %0 = graph.conv2d_nchwc %x, %w : (tensor<1x20x5x7xf32>, tensor<2x1x3x3x16x16xf32>) -> tensor<1x2x3x5x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x1x5x7x16xi32>, %w: tensor<1x1x3x3x16x16xi32>) {
  // expected-error @+1 {{graph.conv2d_nchwc: operand element type i32 is not float}}
  %0 = graph.conv2d_nchwc %x, %w : (tensor<1x1x5x7x16xi32>, tensor<1x1x3x3x16x16xi32>) -> tensor<1x1x3x5x16xi32>
  func.return
}

// -----

func.func @f(%x: tensor<1x1x2x2x16xf32>, %w: tensor<1x1x3x3x16x16xf32>) {
  // expected-error @+1 {{graph.conv2d_nchwc: height: window of extent 3 is larger than the padded input extent 2}}
  %0 = graph.conv2d_nchwc %x, %w : (tensor<1x1x2x2x16xf32>, tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x1x1x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x32x5x7xf32>) {
  // expected-error @+1 {{graph.max_pool2d_nchwc: input must be 5-D (NCHW{b}c), got rank 4}}
  %0 = graph.max_pool2d_nchwc %x {kernel = array<i64: 2, 2>} : (tensor<1x32x5x7xf32>) -> tensor<1x32x4x6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x7x16xf32>) {
  // expected-error @+1 {{graph.avg_pool2d_nchwc: padding must be smaller than the window}}
  %0 = graph.avg_pool2d_nchwc %x {kernel = array<i64: 2, 2>, padding = array<i64: 2, 0, 0, 0>} : (tensor<1x2x5x7x16xf32>) -> tensor<1x2x6x6x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x7x16xf32>) {
  // expected-error @+1 {{graph.max_pool2d_nchwc: unknown attribute 'layout'}}
  %0 = graph.max_pool2d_nchwc %x {kernel = array<i64: 2, 2>, layout = "NCHW"} : (tensor<1x2x5x7x16xf32>) -> tensor<1x2x4x6x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x7x16xi32>) {
  // expected-error @+1 {{graph.max_pool2d_nchwc: operand element type i32 is not float (op takes float tensors)}}
  %0 = graph.max_pool2d_nchwc %x {kernel = array<i64: 2, 2>} : (tensor<1x2x5x7x16xi32>) -> tensor<1x2x4x6x16xi32>
  func.return
}

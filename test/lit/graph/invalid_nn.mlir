// Verifier rules of matmul, matmul_packed, dense, det, conv, pooling (2-D and N-D) and normalization,
// one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{graph.matmul: operands must have rank >= 1 (no scalars in matmul)}}
  %0 = graph.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<f32>
  func.return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{graph.matmul: contraction dims differ: lhs has K=3, rhs has K=4}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @f(%a: tensor<2x2x3xf32>, %b: tensor<5x3x4xf32>) {
  // expected-error @+1 {{graph.matmul: shapes 2 and 5 are not broadcast-compatible}}
  %0 = graph.matmul %a, %b : (tensor<2x2x3xf32>, tensor<5x3x4xf32>) -> tensor<2x2x4xf32>
  func.return
}

// -----

func.func @f(%a: tensor<2x7x5xf32>, %bp: tensor<2x5x3xf32>) {
  // expected-error @+1 {{graph.matmul_packed: lhs must be [1.., M, K] (leading dims 1), got shape [2, 7, 5]}}
  %0 = graph.matmul_packed %a, %bp : (tensor<2x7x5xf32>, tensor<2x5x3xf32>) -> tensor<2x7x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<7x5xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+1 {{graph.matmul_packed: rhs must be column panels [N / R, K, R], got shape [5, 6]}}
  %0 = graph.matmul_packed %a, %b : (tensor<7x5xf32>, tensor<5x6xf32>) -> tensor<7x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<7x4xf32>, %bp: tensor<2x5x3xf32>) {
  // expected-error @+1 {{graph.matmul_packed: contraction dims differ: lhs has K=4, rhs panels have K=5}}
  %0 = graph.matmul_packed %a, %bp : (tensor<7x4xf32>, tensor<2x5x3xf32>) -> tensor<7x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<7x5xi32>, %bp: tensor<2x5x3xi32>) {
  // expected-error @+1 {{graph.matmul_packed: operand element type i32 is not float}}
  %0 = graph.matmul_packed %a, %bp : (tensor<7x5xi32>, tensor<2x5x3xi32>) -> tensor<7x6xi32>
  func.return
}

// -----

func.func @f(%x: tensor<4x16xf32>, %w: tensor<10x16x1xf32>) {
  // expected-error @+1 {{graph.dense: weight must be 2-D [N, K] and x at least 1-D, got weight [10, 16, 1] and x [4, 16]}}
  %0 = graph.dense %x, %w : (tensor<4x16xf32>, tensor<10x16x1xf32>) -> tensor<4x10xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x16xf32>, %w: tensor<10x15xf32>) {
  // expected-error @+1 {{graph.dense: x has K=16 but weight [N, K] has K=15}}
  %0 = graph.dense %x, %w : (tensor<4x16xf32>, tensor<10x15xf32>) -> tensor<4x10xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x16xf32>, %w: tensor<10x16xf32>, %b: tensor<4x10x1xf32>) {
  // expected-error @+1 {{graph.dense: bias of shape [4, 10, 1] does not broadcast to [4, 10]}}
  %0 = graph.dense %x, %w, %b : (tensor<4x16xf32>, tensor<10x16xf32>, tensor<4x10x1xf32>) -> tensor<4x10xf32>
  func.return
}

// -----

func.func @f(%x: tensor<3x9x9xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{graph.conv2d: input and weight must be 4-D, got ranks 3 and 4}}
  %0 = graph.conv2d %x, %w : (tensor<3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x9x9xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{graph.conv2d: weight has 2 input channels per group but input has 3 channels with groups=1}}
  %0 = graph.conv2d %x, %w : (tensor<1x3x9x9xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x7x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x6x9x9xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{graph.conv2d: groups=4 must divide input channels 6 and output channels 4}}
  %0 = graph.conv2d %x, %w {groups = 4 : i64} : (tensor<1x6x9x9xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x7x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{graph.conv2d: attribute 'strides' must have 2 values, got 1}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 2>} : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{graph.conv2d: strides and dilations must be >= 1}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{graph.conv2d: padding must be >= 0}}
  %0 = graph.conv2d %x, %w {padding = array<i64: -1, 0, 0, 0>} : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x2x9xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{graph.conv2d: height: window of extent 3 is larger than the padded input extent 2}}
  %0 = graph.conv2d %x, %w : (tensor<1x3x2x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{graph.conv2d: attribute 'data_layout' must be one of NCHW, NHWC, got CHWN}}
  %0 = graph.conv2d %x, %w {data_layout = "CHWN"} : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x4x3x3xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{graph.conv_transpose2d: weight has 2 input channels but input has 4}}
  %0 = graph.conv_transpose2d %x, %w : (tensor<1x4x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x4x3x3xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{graph.conv_transpose2d: output_padding [1, 1] must be >= 0 and smaller than the stride or the dilation}}
  %0 = graph.conv_transpose2d %x, %w {output_padding = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x4x3x3xi32>, %w: tensor<4x2x3x3xi32>) {
  // expected-error @+1 {{graph.conv_transpose2d: operand element type i32 is not float}}
  %0 = graph.conv_transpose2d %x, %w : (tensor<1x4x3x3xi32>, tensor<4x2x3x3xi32>) -> tensor<1x2x5x5xi32>
  func.return
}

// -----

func.func @f(%x: tensor<1x8x9x9xf32>) {
  // expected-error @+1 {{graph.max_pool2d: missing attribute 'kernel'}}
  %0 = graph.max_pool2d %x : (tensor<1x8x9x9xf32>) -> tensor<1x8x4x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x8x9x9xf32>) {
  // expected-error @+1 {{graph.max_pool2d: attribute 'kernel' must be 2 values >= 1, got [3]}}
  %0 = graph.max_pool2d %x {kernel = array<i64: 3>} : (tensor<1x8x9x9xf32>) -> tensor<1x8x4x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x8x9x9xf32>) {
  // expected-error @+1 {{graph.max_pool2d: attribute 'kernel' must be an integer array like array<i64: 1, 2>}}
  %0 = graph.max_pool2d %x {kernel = array<f32: 3.0, 3.0>} : (tensor<1x8x9x9xf32>) -> tensor<1x8x7x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x8x9x9xf32>) {
  // expected-error @+1 {{graph.avg_pool2d: padding must be smaller than the window}}
  %0 = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 2, 0, 0, 0>} : (tensor<1x8x9x9xf32>) -> tensor<1x8x10x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x1x1x1xf32>) {
  // expected-error @+1 {{graph.max_pool2d: height: pooling window #0 covers only padding}}
  %0 = graph.max_pool2d %x {kernel = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 0>, dilations = array<i64: 2, 1>} : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<8x9x9xf32>) {
  // expected-error @+1 {{graph.avg_pool2d: input must be 4-D, got rank 3}}
  %0 = graph.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<8x9x9xf32>) -> tensor<8x8x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<8x9xf32>) {
  // expected-error @+1 {{graph.global_avg_pool: input must be N x C x spatial..., got rank 2}}
  %0 = graph.global_avg_pool %x : (tensor<8x9xf32>) -> tensor<8x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x8x5x5xf32>, %c: tensor<8xf32>, %d: tensor<5xf32>) {
  // expected-error @+1 {{graph.batch_norm: var must have shape [8] (channels), got [5]}}
  %0 = graph.batch_norm %x, %c, %c, %c, %d : (tensor<1x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<5xf32>) -> tensor<1x8x5x5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x5x16xf32>, %g: tensor<5xf32>) {
  // expected-error @+1 {{graph.layer_norm: scale of shape [5] does not broadcast to the normalized shape [16]}}
  %0 = graph.layer_norm %x, %g, %g : (tensor<2x5x16xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x5x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x10xf32>) {
  // expected-error @+1 {{graph.softmax: axis 2 is out of range for rank 2}}
  %0 = graph.softmax %x {axis = 2 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x10xf32>) {
  // expected-error @+1 {{graph.log_softmax: attribute 'axis' must be an integer like 1 : i64}}
  %0 = graph.log_softmax %x {axis = "last"} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{graph.max_pool3d: input must be 5-D (N, C, spatial...), got rank 4}}
  %0 = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4x4xf32>) {
  // expected-error @+1 {{graph.avg_pool3d: attribute 'kernel' must be 3 values >= 1, got [2, 2]}}
  %0 = graph.avg_pool3d %x {kernel = array<i64: 2, 2>} : (tensor<1x3x4x4x4xf32>) -> tensor<1x3x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4x4xf32>) {
  // expected-error @+1 {{graph.avg_pool3d: padding must be smaller than the window}}
  %0 = graph.avg_pool3d %x {kernel = array<i64: 2, 2, 2>, padding = array<i64: 2, 0, 0, 0, 0, 0>} : (tensor<1x3x4x4x4xf32>) -> tensor<1x3x5x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x4x4x4xf32>) {
  // expected-error @+1 {{does not match the inferred type tensor<1x3x3x3x3xf32>}}
  %0 = graph.max_pool3d %x {kernel = array<i64: 2, 2, 2>} : (tensor<1x3x4x4x4xf32>) -> tensor<1x3x2x2x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>) {
  // expected-error @+1 {{graph.max_pool_with_indices: storage_order must be 0 or 1, got 2}}
  %0, %1 = graph.max_pool_with_indices %x {kernel = array<i64: 2, 2>, storage_order = 2 : i64} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>)
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>) {
  // expected-error @+1 {{does not match the inferred type (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>)}}
  %0, %1 = graph.max_pool_with_indices %x {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi32>)
  func.return
}

// -----

func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{graph.det: input must be square matrices [..., M, M], got shape [2, 3, 4]}}
  %0 = graph.det %x : (tensor<2x3x4xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<3x3xi32>) {
  // expected-error @+1 {{graph.det: operand element type i32 is not float}}
  %0 = graph.det %x : (tensor<3x3xi32>) -> tensor<i32>
  func.return
}

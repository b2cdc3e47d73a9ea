// Verifier rules of the spatial sampling and signal ops, one per chunk.
// RUN: dlc-opt --split-input-file --verify-diagnostics %s

func.func @f(%x: tensor<1x2x3x4xf32>, %g: tensor<1x3x3x3xf32>) {
  // expected-error @+1 {{graph.grid_sample: grid must be N x O1..O2 x 2 for a 2-D x, got [1, 3, 3, 3]}}
  %0 = graph.grid_sample %x, %g : (tensor<1x2x3x4xf32>, tensor<1x3x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x3x4xf32>, %g: tensor<2x3x3x2xf32>) {
  // expected-error @+1 {{graph.grid_sample: grid batch 2 differs from x batch 1}}
  %0 = graph.grid_sample %x, %g : (tensor<1x2x3x4xf32>, tensor<2x3x3x2xf32>) -> tensor<1x2x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x3x4xf32>, %g: tensor<1x3x3x2xf32>) {
  // expected-error @+1 {{graph.grid_sample: mode must be one of linear, nearest, cubic, got bilinear}}
  %0 = graph.grid_sample %x, %g {mode = "bilinear"} : (tensor<1x2x3x4xf32>, tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x3x4xf32>, %g: tensor<1x3x3x2xf32>) {
  // expected-error @+1 {{graph.grid_sample: padding_mode must be one of zeros, border, reflection, got edge}}
  %0 = graph.grid_sample %x, %g {padding_mode = "edge"} : (tensor<1x2x3x4xf32>, tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x3x4xi32>, %g: tensor<1x3x3x2xf32>) {
  // expected-error @+1 {{graph.grid_sample: x element type i32 is not float (op takes float tensors)}}
  %0 = graph.grid_sample %x, %g : (tensor<1x2x3x4xi32>, tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xi32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x3x4x5x6xf32>, %g: tensor<1x3x3x2x2x4xf32>) {
  // expected-error @+1 {{graph.grid_sample: x must be N x C x D1..Dr with 1 <= r <= 3, got rank 6}}
  %0 = graph.grid_sample %x, %g : (tensor<1x2x3x4x5x6xf32>, tensor<1x3x3x2x2x4xf32>) -> tensor<1x2x3x3x2x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x3x4xf32>, %g: tensor<1x3x3x2xf32>) {
  // expected-error @+1 {{graph.grid_sample: result type tensor<1x2x3x4xf32> does not match the inferred type tensor<1x2x3x3xf32>}}
  %0 = graph.grid_sample %x, %g : (tensor<1x2x3x4xf32>, tensor<1x3x3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x5x3xf32>) {
  // expected-error @+1 {{graph.dft: x must have rank >= 2 and a last dim of 1 (real) or 2 (complex), got [2, 5, 3]}}
  %0 = graph.dft %x {axis = 1 : i64, length = 5 : i64} : (tensor<2x5x3xf32>) -> tensor<2x5x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x5x2xf32>) {
  // expected-error @+1 {{graph.dft: axis must not be the last dim (it holds real/imaginary parts)}}
  %0 = graph.dft %x {axis = 2 : i64, length = 5 : i64} : (tensor<2x5x2xf32>) -> tensor<2x5x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x5x2xf32>) {
  // expected-error @+1 {{graph.dft: length must be >= 1, got 0}}
  %0 = graph.dft %x {axis = 1 : i64, length = 0 : i64} : (tensor<2x5x2xf32>) -> tensor<2x5x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x5x2xf32>) {
  // expected-error @+1 {{graph.dft: axis -4 is out of range for rank 3}}
  %0 = graph.dft %x {axis = -4 : i64, length = 5 : i64} : (tensor<2x5x2xf32>) -> tensor<2x5x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x5x2xf32>) {
  // expected-error @+1 {{graph.dft: missing attribute 'axis'}}
  %0 = graph.dft %x {length = 5 : i64} : (tensor<2x5x2xf32>) -> tensor<2x5x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x5x2xi32>) {
  // expected-error @+1 {{graph.dft: x element type i32 is not float (op takes float tensors)}}
  %0 = graph.dft %x {axis = 1 : i64, length = 5 : i64} : (tensor<2x5x2xi32>) -> tensor<2x5x2xi32>
  func.return
}

// -----

func.func @f(%x: tensor<2x5x1xf32>) {
  // expected-error @+1 {{graph.dft: result type tensor<2x5x2xf32> does not match the inferred type tensor<2x3x2xf32>}}
  %0 = graph.dft %x {axis = 1 : i64, length = 5 : i64, onesided = true} : (tensor<2x5x1xf32>) -> tensor<2x5x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x4x5xf32>) {
  // expected-error @+1 {{graph.col2im: x dim 2 (5) must equal the number of block positions 6 ([2, 3])}}
  %0 = graph.col2im %x {image_shape = array<i64: 3, 4>, block_shape = array<i64: 2, 2>} : (tensor<1x4x5xf32>) -> tensor<1x1x3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x5x6xf32>) {
  // expected-error @+1 {{graph.col2im: x dim 1 (5) is not a multiple of prod(block_shape) = 4}}
  %0 = graph.col2im %x {image_shape = array<i64: 3, 4>, block_shape = array<i64: 2, 2>} : (tensor<1x5x6xf32>) -> tensor<1x1x3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x4x6xf32>) {
  // expected-error @+1 {{graph.col2im: strides must have 2 values >= 1, got [1]}}
  %0 = graph.col2im %x {image_shape = array<i64: 3, 4>, block_shape = array<i64: 2, 2>, strides = array<i64: 1>} : (tensor<1x4x6xf32>) -> tensor<1x1x3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x4x6xf32>) {
  // expected-error @+1 {{graph.col2im: block_shape [5, 2] does not fit the padded image [3, 4]}}
  %0 = graph.col2im %x {image_shape = array<i64: 3, 4>, block_shape = array<i64: 5, 2>} : (tensor<1x4x6xf32>) -> tensor<1x1x3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{graph.col2im: x must be N x (C*prod(block_shape)) x L, got rank 2}}
  %0 = graph.col2im %x {image_shape = array<i64: 3, 4>, block_shape = array<i64: 2, 2>} : (tensor<4x6xf32>) -> tensor<1x1x3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x4x6xf32>) {
  // expected-error @+1 {{graph.col2im: missing attribute 'image_shape'}}
  %0 = graph.col2im %x {block_shape = array<i64: 2, 2>} : (tensor<1x4x6xf32>) -> tensor<1x1x3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %r: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{graph.roi_align: sampling_ratio = 0 (adaptive) needs max_samples >= 1 (the static loop bound)}}
  %0 = graph.roi_align %x, %r, %i : (tensor<1x2x5x5xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %r: tensor<3x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{graph.roi_align: rois must be R x 4, got [3, 5]}}
  %0 = graph.roi_align %x, %r, %i {sampling_ratio = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<3x5xf32>, tensor<3xi64>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %r: tensor<3x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{graph.roi_align: batch_indices must have shape [3] (one per roi), got [2]}}
  %0 = graph.roi_align %x, %r, %i {sampling_ratio = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %r: tensor<3x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{graph.roi_align: batch_indices element type f32 is not int (op takes int tensors)}}
  %0 = graph.roi_align %x, %r, %i {sampling_ratio = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %r: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{graph.roi_align: mode must be one of avg, max, got sum}}
  %0 = graph.roi_align %x, %r, %i {sampling_ratio = 2 : i64, mode = "sum"} : (tensor<1x2x5x5xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %r: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{graph.roi_align: coordinate_transformation_mode must be one of half_pixel, output_half_pixel, got asymmetric}}
  %0 = graph.roi_align %x, %r, %i {sampling_ratio = 2 : i64, coordinate_transformation_mode = "asymmetric"} : (tensor<1x2x5x5xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %r: tensor<3x4xf16>, %i: tensor<3xi64>) {
  // expected-error @+1 {{graph.roi_align: operands must have the same element type, got f32, f16}}
  %0 = graph.roi_align %x, %r, %i {sampling_ratio = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<3x4xf16>, tensor<3xi64>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5xf32>, %r: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{graph.roi_align: output_height and output_width must be >= 1, got 0, 1}}
  %0 = graph.roi_align %x, %r, %i {sampling_ratio = 2 : i64, output_height = 0 : i64} : (tensor<1x2x5x5xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x2x0x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %o: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: offset must have shape [1, 8, 3, 3], got [1, 8, 2, 3]}}
  %0 = graph.deform_conv2d %x, %w, %o : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<1x8x2x3xf32>) -> tensor<1x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x1x2x2xf32>, %o: tensor<1x8x3x3xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: w dim 1 (1) times groups (1) must equal the 2 input channels}}
  %0 = graph.deform_conv2d %x, %w, %o : (tensor<1x2x4x4xf32>, tensor<3x1x2x2xf32>, tensor<1x8x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %o: tensor<1x8x3x3xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: groups 2 and offset_groups 1 must divide the 2 input channels (and groups the 3 output channels)}}
  %0 = graph.deform_conv2d %x, %w, %o {groups = 2 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<1x8x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %o: tensor<1x8x3x3xf32>, %b: tensor<3xf32>, %m: tensor<1x4x3x3xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: operands after offset must be an optional mask (rank 4) then an optional bias (rank 1)}}
  %0 = graph.deform_conv2d %x, %w, %o, %b, %m : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<1x8x3x3xf32>, tensor<3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %o: tensor<1x8x3x3xf32>, %m: tensor<1x4x3x2xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: mask must have shape [1, 4, 3, 3], got [1, 4, 3, 2]}}
  %0 = graph.deform_conv2d %x, %w, %o, %m : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<1x8x3x3xf32>, tensor<1x4x3x2xf32>) -> tensor<1x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %o: tensor<1x8x3x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: bias must have shape [3], got [2]}}
  %0 = graph.deform_conv2d %x, %w, %o, %b : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<1x8x3x3xf32>, tensor<2xf32>) -> tensor<1x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x5x2xf32>, %o: tensor<1x20x3x3xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: the kernel 5x2 does not fit the padded input 4x4}}
  %0 = graph.deform_conv2d %x, %w, %o : (tensor<1x2x4x4xf32>, tensor<3x2x5x2xf32>, tensor<1x20x3x3xf32>) -> tensor<1x3x0x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %o: tensor<1x8x3x3xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: strides and dilations must be >= 1 and padding >= 0}}
  %0 = graph.deform_conv2d %x, %w, %o {strides = array<i64: 0, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<1x8x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %o: tensor<1x8x3x3xf32>) {
  // expected-error @+1 {{graph.deform_conv2d: unknown attribute 'stride' (known: strides, padding, dilations, groups, offset_groups)}}
  %0 = graph.deform_conv2d %x, %w, %o {stride = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<1x8x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return
}

// Round trips of the spatial sampling and signal ops (grid_sample, dft, col2im,
// roi_align, deform_conv2d): custom -> print -> parse -> print, and
// custom -> generic -> custom, are exact.
// RUN: dlc-opt %s | dlc-opt | filecheck %s
// RUN: dlc-opt --generic %s | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @spatial(%x: tensor<1x3x5x7xf32>, %grid: tensor<1x2x4x2xf32>, %v: tensor<2x3x4x2x2xf32>, %vgrid: tensor<2x1x3x2x3xf32>, %sig: tensor<2x5x1xf32>, %spec: tensor<3x4x2xf32>, %cols: tensor<2x18x16xf32>, %img: tensor<2x3x7x5xf32>, %rois: tensor<4x4xf32>, %ids: tensor<4xi64>, %dx: tensor<1x2x4x5xf32>, %dw: tensor<3x2x2x2xf32>, %off: tensor<1x8x5x6xf32>, %mask: tensor<1x4x5x6xf32>, %b: tensor<3xf32>) {
// CHECK-NEXT:  %0 = graph.grid_sample %x, %grid : (tensor<1x3x5x7xf32>, tensor<1x2x4x2xf32>) -> tensor<1x3x2x4xf32>
// CHECK-NEXT:  %1 = graph.grid_sample %x, %grid {mode = "cubic", padding_mode = "reflection", align_corners = true} : (tensor<1x3x5x7xf32>, tensor<1x2x4x2xf32>) -> tensor<1x3x2x4xf32>
// CHECK-NEXT:  %2 = graph.grid_sample %v, %vgrid {mode = "nearest", padding_mode = "border"} : (tensor<2x3x4x2x2xf32>, tensor<2x1x3x2x3xf32>) -> tensor<2x3x1x3x2xf32>
// CHECK-NEXT:  %3 = graph.dft %sig {axis = 1 : i64, length = 7 : i64, onesided = true} : (tensor<2x5x1xf32>) -> tensor<2x4x2xf32>
// CHECK-NEXT:  %4 = graph.dft %spec {axis = -2 : i64, length = 6 : i64, inverse = true, onesided = true} : (tensor<3x4x2xf32>) -> tensor<3x6x1xf32>
// CHECK-NEXT:  %5 = graph.dft %spec {axis = 0 : i64, length = 2 : i64, inverse = true} : (tensor<3x4x2xf32>) -> tensor<2x4x2xf32>
// CHECK-NEXT:  %6 = graph.col2im %cols {image_shape = array<i64: 5, 4>, block_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>} : (tensor<2x18x16xf32>) -> tensor<2x3x5x4xf32>
// CHECK-NEXT:  %7 = graph.roi_align %img, %rois, %ids {output_height = 2 : i64, output_width = 3 : i64, sampling_ratio = 2 : i64, mode = "max"} : (tensor<2x3x7x5xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x2x3xf32>
// CHECK-NEXT:  %8 = graph.roi_align %img, %rois, %ids {sampling_ratio = 0 : i64, max_samples = 5 : i64, spatial_scale = 2.500000e-01 : f32, coordinate_transformation_mode = "output_half_pixel"} : (tensor<2x3x7x5xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x1x1xf32>
// CHECK-NEXT:  %9 = graph.deform_conv2d %dx, %dw, %off, %mask, %b {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x5xf32>, tensor<3x2x2x2xf32>, tensor<1x8x5x6xf32>, tensor<1x4x5x6xf32>, tensor<3xf32>) -> tensor<1x3x5x6xf32>
// CHECK-NEXT:  %10 = graph.deform_conv2d %dx, %dw, %off {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x5xf32>, tensor<3x2x2x2xf32>, tensor<1x8x5x6xf32>) -> tensor<1x3x5x6xf32>
// CHECK-NEXT:   func.return

func.func @spatial(%x: tensor<1x3x5x7xf32>, %grid: tensor<1x2x4x2xf32>, %v: tensor<2x3x4x2x2xf32>, %vgrid: tensor<2x1x3x2x3xf32>, %sig: tensor<2x5x1xf32>, %spec: tensor<3x4x2xf32>, %cols: tensor<2x18x16xf32>, %img: tensor<2x3x7x5xf32>, %rois: tensor<4x4xf32>, %ids: tensor<4xi64>, %dx: tensor<1x2x4x5xf32>, %dw: tensor<3x2x2x2xf32>, %off: tensor<1x8x5x6xf32>, %mask: tensor<1x4x5x6xf32>, %b: tensor<3xf32>) {
  %0 = graph.grid_sample %x, %grid : (tensor<1x3x5x7xf32>, tensor<1x2x4x2xf32>) -> tensor<1x3x2x4xf32>
  %1 = graph.grid_sample %x, %grid {mode = "cubic", padding_mode = "reflection", align_corners = true} : (tensor<1x3x5x7xf32>, tensor<1x2x4x2xf32>) -> tensor<1x3x2x4xf32>
  %2 = graph.grid_sample %v, %vgrid {mode = "nearest", padding_mode = "border"} : (tensor<2x3x4x2x2xf32>, tensor<2x1x3x2x3xf32>) -> tensor<2x3x1x3x2xf32>
  %3 = graph.dft %sig {axis = 1 : i64, length = 7 : i64, onesided = true} : (tensor<2x5x1xf32>) -> tensor<2x4x2xf32>
  %4 = graph.dft %spec {axis = -2 : i64, length = 6 : i64, inverse = true, onesided = true} : (tensor<3x4x2xf32>) -> tensor<3x6x1xf32>
  %5 = graph.dft %spec {axis = 0 : i64, length = 2 : i64, inverse = true} : (tensor<3x4x2xf32>) -> tensor<2x4x2xf32>
  %6 = graph.col2im %cols {image_shape = array<i64: 5, 4>, block_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>} : (tensor<2x18x16xf32>) -> tensor<2x3x5x4xf32>
  %7 = graph.roi_align %img, %rois, %ids {output_height = 2 : i64, output_width = 3 : i64, sampling_ratio = 2 : i64, mode = "max"} : (tensor<2x3x7x5xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x2x3xf32>
  %8 = graph.roi_align %img, %rois, %ids {sampling_ratio = 0 : i64, max_samples = 5 : i64, spatial_scale = 2.500000e-01 : f32, coordinate_transformation_mode = "output_half_pixel"} : (tensor<2x3x7x5xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x1x1xf32>
  %9 = graph.deform_conv2d %dx, %dw, %off, %mask, %b {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x5xf32>, tensor<3x2x2x2xf32>, tensor<1x8x5x6xf32>, tensor<1x4x5x6xf32>, tensor<3xf32>) -> tensor<1x3x5x6xf32>
  %10 = graph.deform_conv2d %dx, %dw, %off {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x5xf32>, tensor<3x2x2x2xf32>, tensor<1x8x5x6xf32>) -> tensor<1x3x5x6xf32>
  func.return
}

// simplify-inference: a per-channel scale after conv2d/matmul goes into the
// weights (computed at compile time), shifts merge into one bias add.
// RUN: dlc-opt %s -p simplify-inference | filecheck %s
// RUN: not dlc-opt %s -p 'simplify-inference{level=2}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: dlc-opt: error: pass 'simplify-inference' has no option 'level' (it takes no options)
// OPTION-NOT: Traceback

func.func @conv_scale_shift(%x: tensor<1x1x3x5xf32>) -> tensor<1x2x3x5xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[-2.0]]]]> : tensor<2x1x1x1xf32>
  %b = graph.constant dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>
  %s = graph.constant dense<[[[3.0]], [[4.0]]]> : tensor<2x1x1xf32>
  %t = graph.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>
  %y = graph.conv2d %x, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %yb = graph.add %y, %b : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  %m = graph.mul %yb, %s : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  %a = graph.add %m, %t : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  func.return %a : tensor<1x2x3x5xf32>
}
// (y + 0.5) * 3 + 1 = 3y + 2.5 and (y + 0.25) * 4 + 2 = 4y + 3:
// CHECK-LABEL: func.func @conv_scale_shift
// CHECK-NEXT:  %[[W:[a-z0-9_]+]] = graph.constant dense<{{\[\[\[\[}}3.000000e+00]]], {{\[\[\[}}-8.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:  %[[Y:[a-z0-9_]+]] = graph.conv2d %x, %[[W]]
// CHECK-NEXT:  %[[B:[a-z0-9_]+]] = graph.constant dense<{{\[\[\[}}2.500000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:  %[[A:[a-z0-9_]+]] = graph.add %[[Y]], %[[B]]
// CHECK-NEXT:  func.return %[[A]]

func.func @spatial_scale_stays(%x: tensor<1x1x3x5xf32>) -> tensor<1x2x3x5xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[-2.0]]]]> : tensor<2x1x1x1xf32>
  %s = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %y = graph.conv2d %x, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %m = graph.mul %y, %s : (tensor<1x2x3x5xf32>, tensor<5xf32>) -> tensor<1x2x3x5xf32>
  func.return %m : tensor<1x2x3x5xf32>
}
// CHECK-LABEL: func.func @spatial_scale_stays
// CHECK:       graph.conv2d
// CHECK-NEXT:  graph.mul

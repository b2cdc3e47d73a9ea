// simplify-inference: per-channel scales fold into conv2d/matmul weights; scale and
// bias chains combine; what is left of a batch norm is one bias add.
// RUN: dlc-opt %s --split-input-file -p simplify-inference | filecheck %s
// RUN: dlc-opt %s --split-input-file -p simplify-inference,fuse-ops | filecheck %s --check-prefix=FUSED

// conv2d * s[C,1,1] + t: the scale goes into the weights (O axis), the bias stays.
func.func @conv_scale_shift(%x: tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %s = graph.constant dense<[[[2.0]], [[-0.5]]]> : tensor<2x1x1xf32>
  %t = graph.constant dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>
  %y = graph.conv2d %x, %w : (tensor<1x1x5x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x5x4xf32>
  %m = graph.mul %y, %s : (tensor<1x2x5x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x5x4xf32>
  %a = graph.add %m, %t : (tensor<1x2x5x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x5x4xf32>
  func.return %a : tensor<1x2x5x4xf32>
}
// CHECK-LABEL: func.func @conv_scale_shift
// CHECK-DAG:     %[[T:.*]] = graph.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}-1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-DAG:     %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}-1.500000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK:         %[[Y:.*]] = graph.conv2d %x, %[[W]] :
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[Y]], %[[T]] :
// CHECK-NEXT:    func.return %[[A]]
// CHECK-NOT:     graph.mul
// the bias add then joins the convolution's group
// FUSED-LABEL: func.func @conv_scale_shift
// FUSED:         graph.conv2d {{.*}}dlc.group = 0
// FUSED-NEXT:    graph.add {{.*}}dlc.group = 0

// -----

// matmul * s[N] with a constant 2-D weight: W's columns are scaled.
func.func @dense_scale(%x: tensor<5x2xf32>) -> tensor<5x3xf32> {
  %w = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %s = graph.constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %y = graph.matmul %x, %w : (tensor<5x2xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
  %m = graph.mul %y, %s : (tensor<5x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  func.return %m : tensor<5x3xf32>
}
// CHECK-LABEL: func.func @dense_scale
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[}}2.000000e+00, -2.000000e+00, 1.500000e+00], [8.000000e+00, -5.000000e+00, 3.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.matmul %x, %[[W]] :
// CHECK-NEXT:    func.return %[[Y]]

// -----

// (x + b) * s + c -> x * s + (b * s + c): one scale, one bias.
func.func @bias_then_scale(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %b = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = graph.constant dense<[2.0, 2.0, 4.0]> : tensor<3xf32>
  %c = graph.constant dense<[0.5, 0.5, 0.5]> : tensor<3xf32>
  %a = graph.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %m = graph.mul %a, %s : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %a2 = graph.add %m, %c : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return %a2 : tensor<4x3xf32>
}
// CHECK-LABEL: func.func @bias_then_scale
// CHECK:         %[[M:.*]] = graph.mul %x, %{{.*}} :
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[2.500000e+00, 4.500000e+00, 1.250000e+01]> : tensor<3xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.add %[[M]], %[[B]] :
// CHECK-NEXT:    func.return %[[R]]

// -----

// What must not fold:
//  * a scale that varies along a spatial axis ([1, 5, 1]) is not per output channel;
//  * a conv2d result with a second user (the unscaled value is still needed);
//  * a scale that is not a constant (a function argument);
//  * a matmul whose weight is not a constant.
func.func @negatives(%x: tensor<1x1x5x4xf32>, %v: tensor<2x1x1xf32>, %p: tensor<5x2xf32>, %q: tensor<2x3xf32>)
    -> (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<5x3xf32>) {
  %w = graph.constant dense<[[[[1.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %sp = graph.constant dense<[[[1.0], [2.0], [3.0], [4.0], [5.0]]]> : tensor<1x5x1xf32>
  %y1 = graph.conv2d %x, %w : (tensor<1x1x5x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x5x4xf32>
  %m1 = graph.mul %y1, %sp : (tensor<1x2x5x4xf32>, tensor<1x5x1xf32>) -> tensor<1x2x5x4xf32>
  %s = graph.constant dense<[[[2.0]], [[-0.5]]]> : tensor<2x1x1xf32>
  %y2 = graph.conv2d %x, %w : (tensor<1x1x5x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x5x4xf32>
  %m2 = graph.mul %y2, %s : (tensor<1x2x5x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x5x4xf32>
  %d2 = graph.add %m2, %y2 : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %y3 = graph.conv2d %x, %w : (tensor<1x1x5x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x5x4xf32>
  %m3 = graph.mul %y3, %v : (tensor<1x2x5x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x5x4xf32>
  %cs = graph.constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %y4 = graph.matmul %p, %q : (tensor<5x2xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
  %m4 = graph.mul %y4, %cs : (tensor<5x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  func.return %m1, %d2, %m3, %m4 : tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<5x3xf32>
}
// CHECK-LABEL: func.func @negatives
// CHECK:         %y1 = graph.conv2d %x, %w :
// CHECK-NEXT:    %m1 = graph.mul %y1, %sp :
// CHECK:         %y2 = graph.conv2d %x, %w :
// CHECK-NEXT:    %m2 = graph.mul %y2, %s :
// CHECK-NEXT:    %d2 = graph.add %m2, %y2 :
// CHECK-NEXT:    %y3 = graph.conv2d %x, %w :
// CHECK-NEXT:    %m3 = graph.mul %y3, %v :
// CHECK:         %y4 = graph.matmul %p, %q :
// CHECK-NEXT:    %m4 = graph.mul %y4, %cs :

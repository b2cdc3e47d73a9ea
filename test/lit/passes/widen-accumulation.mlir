// widen-accumulation: f16 matmul/conv/pool/reduce ops compute in f32 between
// two casts (one rounding at the end instead of one per accumulated term);
// max pools and f32 ops are left alone.
// RUN: dlc-opt %s -p widen-accumulation | filecheck %s
// RUN: dlc-opt %s -p widen-accumulation,widen-accumulation | filecheck %s
// RUN: not dlc-opt %s -p 'widen-accumulation{width=32}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: dlc-opt: error: pass 'widen-accumulation' has no option 'width' (it takes no options)
// OPTION-NOT: Traceback

func.func @f16_reductions(%a: tensor<3x5xf16>, %b: tensor<5x7xf16>, %x: tensor<1x2x5x5xf16>, %w: tensor<3x2x3x3xf16>) -> (tensor<3x7xf16>, tensor<1x3x3x3xf16>, tensor<3x1xf16>, tensor<1x2x2x2xf16>, tensor<1x2x4x4xf16>) {
  %m = graph.matmul %a, %b : (tensor<3x5xf16>, tensor<5x7xf16>) -> tensor<3x7xf16>
  %c = graph.conv2d %x, %w : (tensor<1x2x5x5xf16>, tensor<3x2x3x3xf16>) -> tensor<1x3x3x3xf16>
  %s = graph.reduce_sum %a {axes = array<i64: 1>, keepdims = true} : (tensor<3x5xf16>) -> tensor<3x1xf16>
  %p = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5xf16>) -> tensor<1x2x2x2xf16>
  %q = graph.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xf16>) -> tensor<1x2x4x4xf16>
  func.return %m, %c, %s, %p, %q : tensor<3x7xf16>, tensor<1x3x3x3xf16>, tensor<3x1xf16>, tensor<1x2x2x2xf16>, tensor<1x2x4x4xf16>
}
func.func @f32_untouched(%a: tensor<3x5xf32>, %b: tensor<5x7xf32>) -> tensor<3x7xf32> {
  %m = graph.matmul %a, %b : (tensor<3x5xf32>, tensor<5x7xf32>) -> tensor<3x7xf32>
  func.return %m : tensor<3x7xf32>
}

// CHECK-LABEL: func.func @f16_reductions
// CHECK-NEXT:    %m = graph.cast %a {to = f32} : (tensor<3x5xf16>) -> tensor<3x5xf32>
// CHECK-NEXT:    %m_1 = graph.cast %b {to = f32} : (tensor<5x7xf16>) -> tensor<5x7xf32>
// CHECK-NEXT:    %m_2 = graph.matmul %m, %m_1 : (tensor<3x5xf32>, tensor<5x7xf32>) -> tensor<3x7xf32>
// CHECK-NEXT:    %m_3 = graph.cast %m_2 {to = f16} : (tensor<3x7xf32>) -> tensor<3x7xf16>
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
// CHECK:         graph.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
// CHECK:         graph.avg_pool2d %{{.*}} : (tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %p_2 = graph.cast %p_1 {to = f16} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf16>
// CHECK-NEXT:    %q = graph.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xf16>) -> tensor<1x2x4x4xf16>
// CHECK-NEXT:    func.return %m_3, %c_3, %s_2, %p_2, %q
// CHECK-LABEL: func.func @f32_untouched
// CHECK-NEXT:    %m = graph.matmul %a, %b : (tensor<3x5xf32>, tensor<5x7xf32>) -> tensor<3x7xf32>
// CHECK-NEXT:    func.return %m

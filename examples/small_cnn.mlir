// A small image classifier in the graph dialect. Weights live in
// small_cnn.weights.npz (the module's dlc.weights attribute).
//   dlc run examples/small_cnn.mlir --check
builtin.module attributes {dlc.weights = "small_cnn.weights.npz"} {
  func.func @main(%image: tensor<1x3x32x32xf32>) -> tensor<1x10xf32> {
    %w1 = graph.weight "conv1.weight" : tensor<16x3x3x3xf32>
    %c1 = graph.conv2d %image, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x32x32xf32>
    %g = graph.weight "bn.scale" : tensor<16xf32>
    %b = graph.weight "bn.bias" : tensor<16xf32>
    %m = graph.weight "bn.mean" : tensor<16xf32>
    %v = graph.weight "bn.var" : tensor<16xf32>
    %n1 = graph.batch_norm %c1, %g, %b, %m, %v {epsilon = 1.000000e-05 : f32} : (tensor<1x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x32x32xf32>
    %r1 = graph.relu %n1 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
    %p1 = graph.max_pool2d %r1 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32>
    %w2 = graph.weight "conv2.weight" : tensor<32x16x3x3xf32>
    %c2 = graph.conv2d %p1, %w2 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
    %bias2 = graph.weight "conv2.bias" : tensor<32x1x1xf32>
    %c2b = graph.add %c2, %bias2 : (tensor<1x32x8x8xf32>, tensor<32x1x1xf32>) -> tensor<1x32x8x8xf32>
    %r2 = graph.relu %c2b : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
    %gap = graph.global_avg_pool %r2 : (tensor<1x32x8x8xf32>) -> tensor<1x32x1x1xf32>
    %flat = graph.reshape %gap {shape = array<i64: 1, 32>} : (tensor<1x32x1x1xf32>) -> tensor<1x32xf32>
    %fw = graph.weight "fc.weight" : tensor<10x32xf32>
    %fb = graph.weight "fc.bias" : tensor<10xf32>
    %logits = graph.dense %flat, %fw, %fb : (tensor<1x32xf32>, tensor<10x32xf32>, tensor<10xf32>) -> tensor<1x10xf32>
    %probs = graph.softmax %logits {axis = -1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32>
    func.return %probs : tensor<1x10xf32>
  }
}

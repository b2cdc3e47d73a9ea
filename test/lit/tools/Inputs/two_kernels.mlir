func.func @main(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %d = graph.reduce_sum %c {axes = array<i64: 0>, keepdims = true} : (tensor<3x4xf32>) -> tensor<1x4xf32>
  %e = graph.mul %c, %d : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  func.return %c, %e : tensor<3x4xf32>, tensor<3x4xf32>
}

func.func @main(%a: tensor<3x5xf32>, %b: tensor<5x2xf32>) -> tensor<3x2xf32> {
  %r = graph.matmul %a, %b : (tensor<3x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}

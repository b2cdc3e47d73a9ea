func.func @main(%a: tensor<3x4xf32>, %b: tensor<5xf32>) -> tensor<3x4xf32> {
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<5xf32>) -> tensor<3x4xf32>
  func.return %c : tensor<3x4xf32>
}

builtin.module attributes {dlc.weights = "model.weights.npz"} {
  func.func @main(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %w = graph.weight "fc.w" : tensor<3x4xf32>
    %s = graph.add %a, %w : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    func.return %s : tensor<3x4xf32>
  }
}

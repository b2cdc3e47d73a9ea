func.func @main(%a: tensor<3xf16>) -> tensor<3xf16> {
  %r = graph.exp %a : (tensor<3xf16>) -> tensor<3xf16>
  func.return %r : tensor<3xf16>
}

"""Write examples/small_cnn.mlir + small_cnn.weights.npz: a small CNN in graph IR.

conv2d -> batch_norm -> relu -> max_pool2d -> conv2d(stride 2) -> relu ->
global_avg_pool -> reshape -> dense -> softmax, on a 1x3x32x32 input; seeded
random weights in the external weights store (referenced by the module's
`dlc.weights` attribute).
"""

from __future__ import annotations

import os

import numpy as np

from dlc.weights import WeightStore

IR = """\
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
"""


def weights() -> WeightStore:
    rng = np.random.default_rng(0)
    f = lambda *s, scale=0.1: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    return WeightStore({
        "conv1.weight": f(16, 3, 3, 3, scale=0.3),
        "bn.scale": rng.uniform(0.5, 1.5, 16).astype(np.float32),
        "bn.bias": f(16),
        "bn.mean": f(16),
        "bn.var": rng.uniform(0.5, 1.5, 16).astype(np.float32),
        "conv2.weight": f(32, 16, 3, 3),
        "conv2.bias": f(32, 1, 1),
        "fc.weight": f(10, 32, scale=0.3),
        "fc.bias": f(10),
    })


def write(directory: str) -> str:
    path = os.path.join(directory, "small_cnn.mlir")
    with open(path, "w") as f:
        f.write(IR)
    weights().save(os.path.join(directory, "small_cnn.weights.npz"))
    return path


if __name__ == "__main__":
    print("wrote", write(os.path.dirname(os.path.abspath(__file__))))

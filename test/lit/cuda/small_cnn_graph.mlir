// RUN: dlc-translate --to-cuda %s | filecheck %s
// RUN: dlc-translate --to-ptx %s | filecheck %s --check-prefix=PTX
// A small CNN written in graph IR (weights as constants: no weights file), odd
// spatial size 7x5, batch 2: conv + batch_norm + relu, depthwise conv, residual add,
// ceil-mode max pool, global average pool, dense, softmax. Composite ops are legalized
// by the GPU pipeline (the same graph passes as dlc.compile).

func.func @cnn(%x: tensor<2x3x7x5xf32>) -> tensor<2x5xf32> {
  %w1 = graph.constant dense<[[[[0.038, -0.040, 0.192], [0.031, -0.161, 0.108], [0.391, 0.284, -0.211]], [[-0.380, -0.187, 0.012], [-0.698, -0.066, -0.374], [-0.220, -0.163, -0.095]], [[0.123, 0.313, -0.039], [0.410, -0.200, 0.105], [0.271, 0.028, -0.223]]], [[[-0.277, -0.137, 0.066], [-0.303, -0.063, -0.048], [0.162, 0.064, 0.107]], [[-0.196, -0.039, 0.235], [0.448, -0.378, 0.454], [0.404, 0.234, 0.079]], [[-0.094, 0.437, 0.588], [0.540, 0.395, 0.107], [-0.362, -0.001, 0.197]]], [[[-0.387, 0.119, 0.129], [0.209, -0.355, -0.199], [-0.131, -0.351, 0.522]], [[-0.149, 0.099, -0.078], [0.475, 0.396, 0.190], [-0.661, 0.016, 0.205]], [[0.301, -0.185, 0.547], [-0.396, -0.198, 0.281], [0.015, 0.601, 0.057]]], [[[-0.190, -0.113, -0.327], [-0.383, 0.189, 0.174], [0.388, -0.226, 0.507]], [[-0.086, 0.472, -0.130], [-0.221, 0.075, 0.309], [0.048, -0.176, -0.402]], [[-0.420, 0.151, 0.297], [-0.049, -0.322, 0.262], [-0.384, -0.214, 0.186]]]]> : tensor<4x3x3x3xf32>
  %c1 = graph.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x7x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x7x5xf32>
  %s = graph.constant dense<[1.0, 0.5, 1.5, 2.0]> : tensor<4xf32>
  %b = graph.constant dense<[0.1, 0.2, -0.3, 0.0]> : tensor<4xf32>
  %m = graph.constant dense<[0.0, 0.1, 0.2, -0.1]> : tensor<4xf32>
  %v = graph.constant dense<[1.0, 0.9, 1.1, 0.5]> : tensor<4xf32>
  %n1 = graph.batch_norm %c1, %s, %b, %m, %v {epsilon = 1.000000e-05 : f32} : (tensor<2x4x7x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x7x5xf32>
  %r1 = graph.relu %n1 : (tensor<2x4x7x5xf32>) -> tensor<2x4x7x5xf32>
  %w2 = graph.constant dense<[[[[-0.675, 0.116, -0.174], [0.033, -0.023, 0.061], [0.208, -0.228, 0.426]]], [[[0.218, 0.253, 0.349], [0.236, 0.253, 0.023], [-0.428, -0.041, -0.231]]], [[[-0.427, 0.078, -0.171], [-0.309, -0.313, 0.081], [0.108, 0.397, -0.004]]], [[[0.313, 0.421, 0.345], [-0.710, 0.369, 0.102], [0.127, 0.111, 0.115]]]]> : tensor<4x1x3x3xf32>
  %c2 = graph.conv2d %r1, %w2 {padding = array<i64: 1, 1, 1, 1>, groups = 4 : i64} : (tensor<2x4x7x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x7x5xf32>
  %res = graph.add %c2, %r1 : (tensor<2x4x7x5xf32>, tensor<2x4x7x5xf32>) -> tensor<2x4x7x5xf32>
  %p1 = graph.max_pool2d %res {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<2x4x7x5xf32>) -> tensor<2x4x4x3xf32>
  %gap = graph.global_avg_pool %p1 : (tensor<2x4x4x3xf32>) -> tensor<2x4x1x1xf32>
  %flat = graph.reshape %gap {shape = array<i64: 2, 4>} : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
  %fw = graph.constant dense<[[0.096, -0.108, -0.570, -0.033], [-0.241, 0.324, -0.087, 0.025], [-0.255, -0.153, -0.003, -0.446], [0.090, -0.032, -0.356, -0.719], [0.154, -0.089, -0.159, -0.071]]> : tensor<5x4xf32>
  %fb = graph.constant dense<[0.1, -0.2, 0.3, 0.0, 0.5]> : tensor<5xf32>
  %logits = graph.dense %flat, %fw, %fb : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %probs = graph.softmax %logits {axis = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %probs : tensor<2x5xf32>
}

// CHECK:      // @cnn_{{[0-9]+}}_conv2d{{[a-z_]*}}: graph.conv2d
// CHECK-NEXT: // launch: grid (2, 1, 1), block (256, 1, 1)
// CHECK-NEXT: // schedule: generic (one thread per output element, grid-stride loop)
// CHECK-NEXT: // reads x 2x3x7x5xf32, w 4x3x3x3xf32{{.*}}; writes out 2x4x7x5xf32
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(256) cnn_{{[0-9]+}}_conv2d{{[a-z_]*}}(const float* x, const float* w,
// CHECK:        dlc_maximumf({{.*}}, 0.0f);
// CHECK:      // @cnn_{{[0-9]+}}_conv2d{{[a-z_]*}}: graph.conv2d
// CHECK:      // reads x 2x4x7x5xf32, w 4x1x3x3xf32
// CHECK:      // @cnn_{{[0-9]+}}_max_pool2d: graph.max_pool2d
// CHECK-NEXT: // launch: grid (1, 1, 1), block (96, 1, 1)
// CHECK:      // @cnn_{{[0-9]+}}_reduce_mean: graph.reduce_mean
// CHECK:      // @cnn_{{[0-9]+}}_matmul{{[a-z_]*}}: graph.matmul
// CHECK:      // @cnn_{{[0-9]+}}_softmax: graph.softmax
// CHECK:      extern "C" int dlc_cnn__device(const float* x, float* result0, const void* const* dlc_weights) {
// CHECK:        cnn_{{[0-9]+}}_conv2d{{[a-z_]*}}<<<dim3(2, 1, 1), dim3(256, 1, 1)>>>(x,
// CHECK-NEXT:   DLC_CHECK(cudaGetLastError());
// CHECK:        DLC_CHECK(cudaMalloc((void**)&d_x, 840));
// CHECK:        status = (int)cudaMemcpy(result0, d_result0, 40, cudaMemcpyDeviceToHost);
// CHECK:      // Host entry for @cnn: inputs, outputs (host memory), then the weights
// CHECK-NEXT: // array in this order: {{.+}}.
// CHECK-NEXT: extern "C" int dlc_cnn(const float* x, float* result0, const void* const* dlc_weights) {

// PTX:      .visible .entry cnn_{{[0-9]+}}_conv2d
// PTX:      .maxntid 256, 1, 1
// PTX:      .visible .entry cnn_{{[0-9]+}}_max_pool2d
// PTX-NOT:  .extern .func
